//! Opening a trace file: only plain files are read (a named pipe would block forever),
//! gzip is detected by its magic bytes, not its name, and the file bytes consumed are
//! counted for progress. The file is read (a gzip stream inflated) and UTF-8-decoded on
//! a thread of its own (`TextBlocks`), so reading and inflating overlap parsing.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvError, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::ahead::{scan_block, Scanned};
use super::stream::decode_utf8;
use super::ReadScope;
use crate::error::TriageError;

/// An opened trace file.
pub(super) struct Source {
    /// The uncompressed JSON bytes. `Send`, so decompression can move to its own thread.
    pub(super) bytes: Box<dyn Read + Send>,
    /// File bytes (compressed, for gzip) consumed so far.
    pub(super) consumed: Arc<AtomicU64>,
    pub(super) gzip: bool,
}

pub(super) fn open_source(path: &Path) -> Result<Source, TriageError> {
    // Opening a named pipe waits for a writer, forever if none comes; and the magic-byte
    // check below seeks, which pipes and devices cannot. So only plain files are read.
    let kind = std::fs::metadata(path)
        .map_err(|e| TriageError::input(path, open_message(&e)))?
        .file_type();
    if let Some(what) = special_file(&kind) {
        return Err(TriageError::input(
            path,
            format!("not a regular file ({what}); pass the trace file itself"),
        ));
    }
    let mut file = File::open(path).map_err(|e| TriageError::input(path, open_message(&e)))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(TriageError::input(path, "is a directory, not a trace file"));
    }
    let mut magic = [0u8; 2];
    let mut have = 0;
    while have < 2 {
        match file.read(&mut magic[have..]) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TriageError::input(path, format!("cannot read: {e}"))),
        }
    }
    file.seek(SeekFrom::Start(0))
        .map_err(|e| TriageError::input(path, format!("cannot read: {e}")))?;
    let consumed = Arc::new(AtomicU64::new(0));
    let counted = CountingReader {
        inner: file,
        consumed: Arc::clone(&consumed),
    };
    let gzip = have == 2 && magic == [0x1f, 0x8b];
    let bytes: Box<dyn Read + Send> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(
            io::BufReader::with_capacity(256 * 1024, counted),
        ))
    } else {
        Box::new(counted)
    };
    Ok(Source {
        bytes,
        consumed,
        gzip,
    })
}

/// What a file that is neither a plain file nor a directory is.
fn special_file(kind: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        Some("a named pipe")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        None
    }
}

fn open_message(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => format!("cannot open: {e}"),
    }
}

/// Counts the bytes read from the file, for progress reporting.
struct CountingReader<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Runs a reader (the gzip decoder, or the file itself) on its own thread and hands
/// over its bytes already decoded to text, so reading, inflating and UTF-8 checking
/// overlap parsing. Each block is read straight into the buffer that becomes its text
/// (checked in place, never copied unless it holds invalid UTF-8), and blocks go back
/// to the thread for reuse (no allocation or zeroing per block). With `scan_ahead`, a
/// second thread scans each block's events on the way (`ahead.rs`). The threads end
/// when the input does, on an error, or when this side is dropped.
pub(super) struct TextBlocks {
    blocks: Receiver<io::Result<Block>>,
    /// Set while the parser waits for a block: the scan-ahead thread then hands it the
    /// next block unscanned, for the parser to scan itself (see [`TextBlocks::recv`]).
    parser_waiting: Arc<AtomicBool>,
    pub(super) spare: SyncSender<String>,
    pub(super) spare_scanned: SyncSender<Vec<Scanned>>,
    /// Declared last, so dropped after the channels above have closed.
    _threads: Threads,
}

/// The threads behind a [`TextBlocks`], joined when it is dropped: by then its channels
/// are closed, so each ends within a block, and the buffers it holds are freed before the
/// read returns (a caller that measures what the read trace keeps sees only the trace).
struct Threads(Vec<JoinHandle<()>>);

impl Drop for Threads {
    fn drop(&mut self) {
        for thread in self.0.drain(..) {
            // A thread that panicked has already said so on stderr; its text never came.
            let _ = thread.join();
        }
    }
}

/// One block of the document's text and, when scanned ahead, the events found in it.
pub(super) struct Block {
    pub(super) text: String,
    pub(super) scanned: Vec<Scanned>,
}

/// How many decoded blocks may wait.
const BLOCKS_IN_FLIGHT: usize = 4;

impl TextBlocks {
    /// `copied` counts the text bytes copied on the way (see `ByteStream::copied`).
    pub(super) fn spawn(
        inner: Box<dyn Read + Send>,
        block: usize,
        copied: Arc<AtomicU64>,
        scan_ahead: Option<ReadScope>,
    ) -> Self {
        // With a scan-ahead thread, half the blocks wait on each side of it: as many
        // blocks of text in flight as without, and few blocks' scan results.
        let waiting = if scan_ahead.is_some() {
            BLOCKS_IN_FLIGHT / 2
        } else {
            BLOCKS_IN_FLIGHT
        };
        let (tx, blocks) = sync_channel(waiting);
        let (spare, spares) = sync_channel::<String>(BLOCKS_IN_FLIGHT + 2);
        let (spare_scanned, spare_scans) = sync_channel::<Vec<Scanned>>(waiting + 1);
        let parser_waiting = Arc::new(AtomicBool::new(false));
        let starving = Arc::clone(&parser_waiting);
        let threads = if let Some(scope) = scan_ahead {
            let (text_tx, texts) = sync_channel::<io::Result<Block>>(waiting);
            let reading =
                std::thread::spawn(move || read_blocks(inner, block, &copied, &spares, &text_tx));
            let scanning = std::thread::spawn(move || {
                let mut received = 0u64;
                // Whether the next block goes on unscanned (see `TextBlocks::recv`).
                let mut pass_next = false;
                for message in texts {
                    let scan = !pass_next;
                    let message = message.map(|mut b| {
                        if scan {
                            let mut scanned = spare_scans.try_recv().unwrap_or_default();
                            scanned.clear();
                            scan_block(&b.text, received, scope, &mut scanned);
                            b.scanned = scanned;
                        }
                        received += b.text.len() as u64;
                        b
                    });
                    if tx.send(message).is_err() {
                        return;
                    }
                    // The parser waited for the block scanned here: it is ahead, so it
                    // scans the next block itself while this thread scans the one after.
                    pass_next = scan && starving.swap(false, Ordering::Relaxed);
                }
            });
            vec![reading, scanning]
        } else {
            vec![std::thread::spawn(move || {
                read_blocks(inner, block, &copied, &spares, &tx)
            })]
        };
        TextBlocks {
            blocks,
            parser_waiting,
            spare,
            spare_scanned,
            _threads: Threads(threads),
        }
    }
}

impl TextBlocks {
    /// The next block; `Err` once the input has ended.
    ///
    /// Why the wait is announced: scanning costs twice the parser's own work (issue 22's
    /// profile of a plain 1 GB trace: 1.4 s against 0.7 s), so with every block scanned
    /// ahead the parser would wait on the scanning thread a third of the time. Instead,
    /// when the parser waited for a block, the scanning thread passes the next one on
    /// unscanned (the parser scans it itself, as it does any event cut by a block's end)
    /// and scans the one after: the two share the scanning and neither idles long. Which
    /// thread scans a block changes nothing of what is read (`ahead.rs`).
    pub(super) fn recv(&self) -> Result<io::Result<Block>, RecvError> {
        match self.blocks.try_recv() {
            Ok(block) => return Ok(block),
            Err(TryRecvError::Disconnected) => return Err(RecvError),
            Err(TryRecvError::Empty) => {}
        }
        // Cleared by the scanning thread once it has sent a block (the one this waits
        // for, or one already on its way), not here: awake, this side may be too late.
        self.parser_waiting.store(true, Ordering::Relaxed);
        self.blocks.recv()
    }
}

/// The reading thread: blocks of `block` bytes from `inner`, decoded, sent on `tx`.
fn read_blocks(
    mut inner: Box<dyn Read + Send>,
    block: usize,
    copied: &AtomicU64,
    spares: &Receiver<String>,
    tx: &SyncSender<io::Result<Block>>,
) {
    // An incomplete UTF-8 sequence left from the last block: at most 3 bytes.
    let mut carry: Vec<u8> = Vec::with_capacity(4);
    loop {
        let mut buf = spares
            .try_recv()
            .map(String::into_bytes)
            .unwrap_or_default();
        let want = carry.len() + block;
        // Only a buffer shorter than the block is zeroed, and only its growth.
        if buf.len() < want {
            buf.resize(want, 0);
        }
        buf[..carry.len()].copy_from_slice(&carry);
        let mut filled = carry.len();
        let outcome = loop {
            match inner.read(&mut buf[filled..want]) {
                Ok(0) => break Ok(true),
                Ok(n) => {
                    filled += n;
                    if filled == want {
                        break Ok(false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        buf.truncate(filled);
        let at_end = matches!(outcome, Ok(true));
        let text = block_text(buf, at_end, &mut carry, copied);
        let block_of = Block {
            text,
            scanned: Vec::new(),
        };
        if !block_of.text.is_empty() && tx.send(Ok(block_of)).is_err() {
            return;
        }
        match outcome {
            Ok(false) => {}
            Ok(true) => return,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

/// The bytes of one block as text, checked in place: an incomplete character at the
/// end (unless `at_end`) moves to `carry` for the next block; only a block with
/// invalid bytes is copied, with each invalid sequence replaced by U+FFFD.
fn block_text(buf: Vec<u8>, at_end: bool, carry: &mut Vec<u8>, copied: &AtomicU64) -> String {
    carry.clear();
    let err = match String::from_utf8(buf) {
        Ok(text) => return text,
        Err(err) => err,
    };
    let utf8 = err.utf8_error();
    let mut bytes = err.into_bytes();
    if utf8.error_len().is_none() && !at_end {
        // Valid up to a character cut by the block's end.
        carry.extend_from_slice(&bytes[utf8.valid_up_to()..]);
        bytes.truncate(utf8.valid_up_to());
        match String::from_utf8(bytes) {
            Ok(text) => return text,
            Err(err) => bytes = err.into_bytes(),
        }
    }
    let mut text = String::with_capacity(bytes.len() + 3);
    let decoded = decode_utf8(&mut text, &bytes, at_end);
    copied.fetch_add(decoded as u64, Ordering::Relaxed);
    carry.extend_from_slice(&bytes[decoded..]);
    text
}
