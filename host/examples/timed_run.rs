//! Runs one command and writes its wall time, peak RSS and CPU times to a file, as
//! `/usr/bin/time -f "%e %M %U %S" -o FILE` does, but with the wall time to the
//! microsecond: GNU time prints it to the hundredth of a second, a step of 6% on the
//! 0.15 s triage of the benchmark's 100 MB size (`scripts/bench.sh --scaling`).
//!
//!   timed_run FILE COMMAND [ARGS...]
//!
//! Writes `wall_s max_rss_kb user_s sys_s steal` to FILE; the command's output and exit
//! status pass through (a failed command makes this fail too, with its status). `steal` is
//! the share of the machine's CPU time that its hypervisor gave to others while the
//! command ran (Linux's `/proc/stat`; -1 where there is none): on a shared VM it was 4% to
//! 24% of a 1 GB triage's run, run to run, and the runs' times move with it.

use std::process::{Command, ExitCode};
use std::time::Instant;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(out), Some(program)) = (args.next(), args.next()) else {
        eprintln!("usage: timed_run FILE COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let before = cpu_ticks();
    let start = Instant::now();
    let child = match Command::new(&program).args(args).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("timed_run: cannot run {}: {e}", program.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    let mut status = 0;
    // SAFETY: rusage is plain data, filled by wait4 for the child spawned above, which
    // nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: see above; the pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64();
    if waited != pid {
        eprintln!("timed_run: wait4: {}", std::io::Error::last_os_error());
        return ExitCode::from(2);
    }
    let steal = match (before, cpu_ticks()) {
        (Some((steal0, all0)), Some((steal1, all1))) if all1 > all0 => {
            (steal1 - steal0) as f64 / (all1 - all0) as f64
        }
        _ => -1.0,
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let line = format!(
        "{wall:.6} {} {:.3} {:.3} {steal:.3}\n",
        usage.ru_maxrss,
        seconds(usage.ru_utime),
        seconds(usage.ru_stime)
    );
    if let Err(e) = std::fs::write(&out, line) {
        eprintln!("timed_run: cannot write {}: {e}", out.to_string_lossy());
        return ExitCode::from(2);
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => ExitCode::SUCCESS,
        (true, code) => ExitCode::from(code as u8),
        (false, _) => {
            eprintln!("timed_run: the command was killed by a signal");
            ExitCode::from(1)
        }
    }
}

/// The machine's steal ticks and all its ticks so far: the `cpu` line of `/proc/stat`
/// (user nice system idle iowait irq softirq steal ...).
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    let steal = *ticks.get(7)?;
    Some((steal, ticks.iter().sum()))
}
