//! Ctrl-C while a profiler may be running: the stop is still sent.
//!
//! Once [`install`]ed, a thread of its own takes SIGINT. While a profiler may be running
//! (from just before the start request until its stop is answered, see [`arm`]) the
//! first Ctrl-C only marks the capture interrupted: the capture requests are abandoned,
//! the stop is sent, and the run fails with one line (exit 5). A second Ctrl-C, or one
//! at any other time, ends the process at once with 130, as the default handler would.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::Duration;

static ARMED: AtomicBool = AtomicBool::new(false);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The exit status of a process ended by SIGINT, by shell convention.
const SIGINT_EXIT: i32 = 130;

/// Takes over SIGINT for the rest of the process (idempotent).
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        std::thread::spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                while tokio::signal::ctrl_c().await.is_ok() {
                    let first = !INTERRUPTED.swap(true, Ordering::SeqCst);
                    if !(ARMED.load(Ordering::SeqCst) && first) {
                        std::process::exit(SIGINT_EXIT);
                    }
                }
            });
        });
    });
}

/// While the returned guard lives, Ctrl-C interrupts instead of ending the process.
pub(crate) fn arm() -> Armed {
    INTERRUPTED.store(false, Ordering::SeqCst);
    ARMED.store(true, Ordering::SeqCst);
    Armed
}

pub(crate) struct Armed;

impl Drop for Armed {
    fn drop(&mut self) {
        ARMED.store(false, Ordering::SeqCst);
        INTERRUPTED.store(false, Ordering::SeqCst);
    }
}

/// Completes when Ctrl-C comes (polled: the flag is set by the signal thread).
pub(crate) async fn interrupted() {
    while !INTERRUPTED.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
