//! Opening a trace file: only plain files are read (a named pipe would block forever),
//! gzip is detected by its magic bytes, not its name, and the file bytes consumed are
//! counted for progress. The file is read (a gzip stream inflated, a plain file mapped)
//! and UTF-8-checked on a thread of its own (`TextBlocks`), so reading and inflating
//! overlap parsing.
//!
//! Why a plain file is mapped, not read: `read()` copies every byte out of the page
//! cache, and on a 1 GB plain trace that copy was 0.39 s of the read's 2.6 s of CPU
//! (issue 22's profile), on a pipeline that keeps both cores busy. A mapped block is
//! read where the kernel keeps it. The cost is mmap's own: a file truncated by another
//! process while it is read ends the process with SIGBUS (as with ripgrep, which maps
//! files too). A file that cannot be mapped is read as before.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvError, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use memmap2::{Mmap, MmapOptions};

use super::ahead::{scan_block, Scanned};
use super::gzip::GzipMembers;
use super::stream::decode_utf8;
use super::ReadScope;
use crate::error::TriageError;

/// An opened trace file.
pub(super) struct Source {
    pub(super) bytes: Bytes,
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
    let gzip = have == 2 && magic == [0x1f, 0x8b];
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bytes = if gzip {
        let taken = Arc::new(AtomicU64::new(0));
        let buffered = io::BufReader::with_capacity(256 * 1024, counting(file, &consumed));
        Bytes::Stream {
            inner: Box::new(GzipMembers::new(CountingReader {
                inner: buffered,
                consumed: Arc::clone(&taken),
            })),
            end: Some(StreamEnd { len, taken }),
        }
    } else if len > 0 {
        Bytes::Mapped { file, len }
    } else {
        Bytes::Stream {
            inner: Box::new(counting(file, &consumed)),
            end: None,
        }
    };
    Ok(Source {
        bytes,
        consumed,
        gzip,
    })
}

fn counting(file: File, consumed: &Arc<AtomicU64>) -> CountingReader<File> {
    CountingReader {
        inner: file,
        consumed: Arc::clone(consumed),
    }
}

/// Where the uncompressed JSON comes from. `Send`, so reading moves to its own thread.
pub(super) enum Bytes {
    /// A stream read into buffers: a gzip stream, inflated as it is read, or a file the
    /// metadata gives no size (which may have bytes all the same, as procfs files do).
    /// `end` tells how near its end a gzip stream is.
    Stream {
        inner: Box<dyn Read + Send>,
        end: Option<StreamEnd>,
    },
    /// A plain file of `len` bytes (its size when opened), mapped block by block.
    Mapped { file: File, len: u64 },
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

/// How near its end a gzip stream is: the file's size, and how many of its bytes the
/// inflater has taken (not those only read ahead into its buffer, up to 256 KiB).
pub(super) struct StreamEnd {
    len: u64,
    taken: Arc<AtomicU64>,
}

impl StreamEnd {
    /// About how many bytes of text are left, when `out` bytes came out so far: the
    /// file's bytes not yet taken, at the ratio of text to file bytes so far. A guess
    /// (the ratio varies along a file), which sizes blocks only.
    fn text_left(&self, out: u64) -> Option<u64> {
        let taken = self.taken.load(Ordering::Relaxed);
        let left = u128::from(self.len.checked_sub(taken)?);
        let estimate = left * u128::from(out) / u128::from(taken.max(1));
        Some(u64::try_from(estimate).unwrap_or(u64::MAX))
    }
}

/// Counts the bytes read through it: those read from the file (for progress), or, over
/// the inflater's buffered input, those the inflater takes (for [`StreamEnd`]).
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

impl<R: BufRead> BufRead for CountingReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        self.inner.consume(n);
    }
}

/// Runs the reading (the gzip decoder's, or the mapping of the file) on its own thread
/// and hands over its bytes already decoded to text, so reading, inflating and UTF-8
/// checking overlap parsing. Each block is checked where it lies (read straight into
/// the buffer that becomes its text, or mapped; copied only if it holds invalid UTF-8),
/// and blocks go back to the thread (buffers for reuse, with no allocation or zeroing
/// per block; mappings to be unmapped off the parser's thread). With `scan_ahead`, a
/// second thread scans each block's events on the way (`ahead.rs`). The threads end
/// when the input does, on an error, or when this side is dropped.
pub(super) struct TextBlocks {
    blocks: Receiver<io::Result<Block>>,
    /// Set while the parser waits for a block: the scan-ahead thread then hands it the
    /// next block unscanned, for the parser to scan itself (see [`TextBlocks::recv`]).
    parser_waiting: Arc<AtomicBool>,
    pub(super) spare: SyncSender<BlockText>,
    pub(super) spare_scanned: SyncSender<Vec<Scanned>>,
    /// Scan lists the scan-ahead thread started without a buffer (none was spare): each
    /// grows to a few MB of fresh pages to fault in (an event's record is ~350 bytes),
    /// so tests hold them to the few in flight at once.
    pub(super) scan_lists_made: Arc<AtomicU64>,
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
    pub(super) text: BlockText,
    pub(super) scanned: Vec<Scanned>,
}

/// A block's text: in a buffer (inflated, read, or repaired from invalid UTF-8) or a
/// mapped range of a plain file.
pub(super) enum BlockText {
    Buffer(String),
    Mapped(MappedText),
}

impl Default for BlockText {
    fn default() -> Self {
        BlockText::Buffer(String::new())
    }
}

impl std::ops::Deref for BlockText {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            BlockText::Buffer(text) => text,
            BlockText::Mapped(mapped) => mapped.as_str(),
        }
    }
}

impl BlockText {
    /// The buffer to write into: a mapped block's text is copied into one first (the
    /// stream writes only into its stitch buffer, which is never a mapping).
    pub(super) fn buffer_mut(&mut self) -> &mut String {
        if let BlockText::Mapped(mapped) = self {
            *self = BlockText::Buffer(mapped.as_str().to_owned());
        }
        match self {
            BlockText::Buffer(text) => text,
            BlockText::Mapped(_) => unreachable!("replaced by a buffer above"),
        }
    }

    /// The buffer, for reuse; a mapping is dropped (unmapped) and gives an empty one.
    pub(super) fn into_buffer(self) -> String {
        match self {
            BlockText::Buffer(text) => text,
            BlockText::Mapped(_) => String::new(),
        }
    }
}

/// A mapped range of a file whose first `len` bytes were checked to be UTF-8.
pub(super) struct MappedText {
    map: Mmap,
    len: usize,
}

impl MappedText {
    /// The text of `map[..len]`; the mapping back if that is not UTF-8.
    fn new(map: Mmap, len: usize) -> Result<Self, Mmap> {
        match map.get(..len).map(std::str::from_utf8) {
            Some(Ok(_)) => Ok(MappedText { map, len }),
            _ => Err(map),
        }
    }

    fn as_str(&self) -> &str {
        let bytes = &self.map[..self.len];
        // SAFETY: checked to be UTF-8 in `new`; the mapping is read-only and private, and
        // the bytes change under it only if another process rewrites the file mid-read
        // (the risk every reader of a mapped file takes; see the module's note).
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

/// How many decoded blocks may wait.
pub(super) const BLOCKS_IN_FLIGHT: usize = 4;

/// The size of a read's first block; each next one is twice the last, up to the full
/// size. Also the smallest of its last blocks.
const FIRST_BLOCK: usize = 64 << 10;

/// The sizes of a read's blocks. Why the first are small: the parse thread is the
/// pipeline's slowest stage, and it waited for a whole first block to be inflated and
/// scanned (4-5 ms of every read, issue 22's fixed cost at 100 MB); a 64 KiB block is
/// ready within a tenth of that. Full-size blocks follow within five, where their
/// hand-off costs nothing next to their work.
struct BlockSizes {
    next: usize,
    full: usize,
}

impl BlockSizes {
    fn up_to(full: usize) -> Self {
        let full = full.max(1);
        BlockSizes {
            next: FIRST_BLOCK.min(full),
            full,
        }
    }

    /// The next block's size, with about `left` bytes of text to come if that is known.
    /// Why the last blocks are small too: once the input ends, the blocks still in
    /// flight are scanned and parsed with nothing to overlap them (3.7 ms of every read
    /// with 1 MiB blocks, issue 22); each block here is at most a quarter of what is left,
    /// so those at the end are small (a half left 2.3 ms, a quarter or an eighth 1.5).
    fn take(&mut self, left: Option<u64>) -> usize {
        let size = self.next;
        self.next = size.saturating_mul(2).min(self.full);
        match left {
            Some(left) => {
                let quarter = usize::try_from(left / 4).unwrap_or(usize::MAX);
                size.min(quarter.max(FIRST_BLOCK))
            }
            None => size,
        }
    }
}

impl TextBlocks {
    /// `copied` counts the text bytes copied on the way (see `ByteStream::copied`).
    pub(super) fn spawn(
        bytes: Bytes,
        consumed: Arc<AtomicU64>,
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
        let (spare, spares) = sync_channel::<BlockText>(BLOCKS_IN_FLIGHT + 2);
        // Room for every list there can be, so that none returned is dropped: a list
        // dropped is one made anew, its pages faulted in again (when this held 3, a 1 GB
        // read made 140-158 lists, and they took over half its 86,000 page faults).
        let (spare_scanned, spare_scans) = sync_channel::<Vec<Scanned>>(BLOCKS_IN_FLIGHT + 2);
        let scan_lists_made = Arc::new(AtomicU64::new(0));
        let lists_made = Arc::clone(&scan_lists_made);
        let parser_waiting = Arc::new(AtomicBool::new(false));
        let starving = Arc::clone(&parser_waiting);
        let threads = if let Some(scope) = scan_ahead {
            let (text_tx, texts) = sync_channel::<io::Result<Block>>(waiting);
            let reading = std::thread::spawn(move || {
                read_or_map(bytes, block, &consumed, &copied, &spares, &text_tx)
            });
            let scanning = std::thread::spawn(move || {
                let mut received = 0u64;
                // Whether the next block goes on unscanned (see `TextBlocks::recv`).
                let mut pass_next = false;
                for message in texts {
                    let scan = !pass_next;
                    let message = message.map(|mut b| {
                        if scan {
                            let mut scanned = spare_scans.try_recv().unwrap_or_default();
                            if scanned.capacity() == 0 {
                                lists_made.fetch_add(1, Ordering::Relaxed);
                            }
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
                read_or_map(bytes, block, &consumed, &copied, &spares, &tx)
            })]
        };
        TextBlocks {
            blocks,
            parser_waiting,
            spare,
            spare_scanned,
            scan_lists_made,
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

/// The reading thread: blocks of about `block` bytes, decoded, sent on `tx`.
fn read_or_map(
    bytes: Bytes,
    block: usize,
    consumed: &Arc<AtomicU64>,
    copied: &AtomicU64,
    spares: &Receiver<BlockText>,
    tx: &SyncSender<io::Result<Block>>,
) {
    match bytes {
        Bytes::Stream { inner, end } => read_blocks(inner, end, block, copied, spares, tx),
        Bytes::Mapped { file, len } => map_blocks(file, len, block, consumed, copied, spares, tx),
    }
}

/// Blocks of the file mapped in turn, each cut after a whole character. A block is
/// checked as UTF-8 here, which touches its pages first, so mapping them in falls on
/// this thread too. Should a mapping fail (a file system without mmap), the rest of the
/// file is read.
fn map_blocks(
    mut file: File,
    len: u64,
    block: usize,
    consumed: &Arc<AtomicU64>,
    copied: &AtomicU64,
    spares: &Receiver<BlockText>,
    tx: &SyncSender<io::Result<Block>>,
) {
    let mut offset = 0u64;
    let mut sizes = BlockSizes::up_to(block);
    while offset < len {
        // Blocks the parser is done with come back here to be unmapped.
        while spares.try_recv().is_ok() {}
        let left = len - offset;
        let want = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(sizes.take(Some(left)));
        // Three bytes more: the rest of a character cut by the block's end.
        let span = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(want.saturating_add(3));
        // SAFETY: a read-only private mapping of a regular file; see `MappedText::as_str`.
        let map = unsafe { MmapOptions::new().offset(offset).len(span).map(&file) };
        let map = match map {
            Ok(map) => map,
            Err(_) => {
                if let Err(e) = file.seek(SeekFrom::Start(offset)) {
                    let _ = tx.send(Err(e));
                    return;
                }
                let rest = Box::new(counting(file, consumed));
                return read_blocks(rest, None, block, copied, spares, tx);
            }
        };
        let (text, used) = mapped_block(map, want, offset + span as u64 == len, copied);
        offset += used as u64;
        consumed.fetch_add(used as u64, Ordering::Relaxed);
        let block_of = Block {
            text,
            scanned: Vec::new(),
        };
        if tx.send(Ok(block_of)).is_err() {
            return;
        }
    }
}

/// The text of a mapped block of `want` bytes (extended to the end of a character the
/// block cuts), and how many of the mapped bytes it used. `at_end` if the mapping reaches
/// the end of the file. Only a block with invalid UTF-8 is copied, as in `block_text`.
fn mapped_block(map: Mmap, want: usize, at_end: bool, copied: &AtomicU64) -> (BlockText, usize) {
    let mut end = want.min(map.len());
    while end < map.len() && map[end] & 0xC0 == 0x80 {
        end += 1;
    }
    let whole = at_end && end == map.len();
    let map = match MappedText::new(map, end) {
        Ok(mapped) => return (BlockText::Mapped(mapped), end),
        Err(map) => map,
    };
    let bytes = &map[..end];
    let mut text = String::with_capacity(end + 3);
    let mut decoded = decode_utf8(&mut text, bytes, whole);
    if decoded == 0 {
        // A sequence left incomplete though three bytes more were mapped: invalid, so
        // decoded as at the end (to U+FFFD), never waited for.
        decoded = decode_utf8(&mut text, bytes, true);
    }
    copied.fetch_add(decoded as u64, Ordering::Relaxed);
    (BlockText::Buffer(text), decoded)
}

/// The reading thread for a stream: blocks of `block` bytes from `inner`.
fn read_blocks(
    mut inner: Box<dyn Read + Send>,
    end: Option<StreamEnd>,
    block: usize,
    copied: &AtomicU64,
    spares: &Receiver<BlockText>,
    tx: &SyncSender<io::Result<Block>>,
) {
    // An incomplete UTF-8 sequence left from the last block: at most 3 bytes.
    let mut carry: Vec<u8> = Vec::with_capacity(4);
    let mut sizes = BlockSizes::up_to(block);
    // Bytes inflated so far: with the file's bytes taken, the ratio that tells about how
    // much text is left.
    let mut out = 0u64;
    loop {
        let mut buf = spares
            .try_recv()
            .map(|spare| spare.into_buffer().into_bytes())
            .unwrap_or_default();
        let left = end.as_ref().and_then(|end| end.text_left(out));
        let want = carry.len() + sizes.take(left);
        // A spare holds a full block already, so at most the few bytes of a longer carry
        // are zeroed. A new buffer, or one of the first, smaller blocks, is replaced by a
        // zeroed allocation: that comes from fresh pages, zero already, where a resize
        // would write every byte. Three bytes more leave room for a later carry.
        if buf.capacity() < want {
            buf = vec![0; want + 3];
        } else if buf.len() < want {
            buf.resize(want, 0);
        }
        buf[..carry.len()].copy_from_slice(&carry);
        let mut filled = carry.len();
        let outcome = loop {
            match inner.read(&mut buf[filled..want]) {
                Ok(0) => break Ok(true),
                Ok(n) => {
                    filled += n;
                    out += n as u64;
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
            text: BlockText::Buffer(text),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_start_small_and_double_up_to_the_full_size() {
        let mut sizes = BlockSizes::up_to(1 << 20);
        let taken: Vec<usize> = (0..7).map(|_| sizes.take(None)).collect();
        assert_eq!(
            taken,
            [
                64 << 10,
                128 << 10,
                256 << 10,
                512 << 10,
                1 << 20,
                1 << 20,
                1 << 20
            ]
        );
        // A full size below the first block's (tests' tiny refills) is every block's.
        let mut tiny = BlockSizes::up_to(7);
        assert_eq!([tiny.take(None), tiny.take(Some(1 << 30))], [7, 7]);
        let mut none = BlockSizes::up_to(0);
        assert_eq!(none.take(None), 1);
    }

    #[test]
    fn blocks_near_the_end_take_a_quarter_of_what_is_left_down_to_the_first_size() {
        let mut sizes = BlockSizes::up_to(1 << 20);
        for _ in 0..5 {
            sizes.take(None);
        }
        let total: u64 = 6 << 20;
        let mut left = total;
        let mut taken = Vec::new();
        while left > 0 {
            let size = (sizes.take(Some(left)) as u64).min(left);
            assert!(size <= (left / 4).max(64 << 10), "{size} with {left} left");
            taken.push(size);
            left -= size;
        }
        assert_eq!(taken.iter().sum::<u64>(), total);
        // Full blocks while four or more are left.
        assert_eq!(taken[..3], [1 << 20, 1 << 20, 1 << 20]);
        // None under the first size but the very last.
        assert!(taken[..taken.len() - 1].iter().all(|&b| b >= 64 << 10));
        // What can be in flight when the input ends is under half a full block.
        let in_flight: u64 = taken[taken.len() - (BLOCKS_IN_FLIGHT + 2)..].iter().sum();
        assert!(in_flight < 512 << 10, "{in_flight}: {taken:?}");
        // Early, with much left, the ramp up still rules.
        let mut fresh = BlockSizes::up_to(1 << 20);
        assert_eq!(fresh.take(Some(1 << 30)), 64 << 10);
        assert_eq!(fresh.take(Some(1 << 30)), 128 << 10);
    }

    #[test]
    fn a_gzip_streams_text_left_is_its_untaken_bytes_at_the_ratio_so_far() {
        let taken = Arc::new(AtomicU64::new(0));
        let end = StreamEnd {
            len: 1000,
            taken: Arc::clone(&taken),
        };
        // Nothing taken yet: nothing to go on, so "none left" keeps blocks small.
        assert_eq!(end.text_left(0), Some(0));
        taken.store(400, Ordering::Relaxed);
        // 400 file bytes gave 2,800 of text: 600 left give about 4,200.
        assert_eq!(end.text_left(2800), Some(4200));
        // A file grown past its size at open: no estimate, full blocks.
        taken.store(1200, Ordering::Relaxed);
        assert_eq!(end.text_left(9000), None);
    }

    #[test]
    fn counted_over_a_buffer_are_the_bytes_taken_not_those_read_ahead() {
        let taken = Arc::new(AtomicU64::new(0));
        let data = vec![7u8; 10_000];
        let mut input = CountingReader {
            inner: io::BufReader::with_capacity(4096, &data[..]),
            consumed: Arc::clone(&taken),
        };
        assert_eq!(input.fill_buf().unwrap().len(), 4096);
        input.consume(100);
        assert_eq!(taken.load(Ordering::Relaxed), 100);
        let mut some = [0u8; 50];
        input.read_exact(&mut some).unwrap();
        assert_eq!(taken.load(Ordering::Relaxed), 150);
    }
}
