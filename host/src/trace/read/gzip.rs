//! A gzip file (RFC 1952), every member in turn, inflated by flate2's raw-deflate
//! `Decompress` (zlib-rs) and checked with `crc32fast`.
//!
//! Why not `flate2::read::MultiGzDecoder`: with the zlib-rs backend, flate2 checks each
//! member's CRC-32 with zlib-rs's `crc32`, which on the benchmark's machine (x86-64 with
//! PCLMULQDQ) ran at 70 ms per GiB against `crc32fast`'s 18 ms; the check was 4.4% of a
//! 4-rank `--all-ranks` run's CPU, all of it on the reading threads. The container
//! itself is a few fields, read here as the RFC gives them and as strictly as flate2
//! reads them (magic, method 8, no reserved flag, the header's CRC-16 when flagged, the
//! trailer's CRC-32 and length), with flate2's error kinds: a file cut short is
//! `UnexpectedEof`, anything invalid `InvalidInput`, so `stream.rs` words them as before.

use std::io::{self, BufRead, Read};

use flate2::{Decompress, FlushDecompress, Status};

/// Header flags (RFC 1952, 2.3.1).
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const FRESERVED: u8 = 0xe0;

/// The inflated bytes of every member of a gzip stream, one after another.
pub(super) struct GzipMembers<R> {
    input: R,
    inflate: Decompress,
    /// The CRC-32 of the current member's bytes so far (their count is the inflater's
    /// `total_out`, reset with it at each header).
    crc: crc32fast::Hasher,
    at: Place,
}

#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// Before the first member's header.
    Start,
    /// Inside a member's deflate data.
    Body,
    /// After a member's trailer: another member, or the end.
    Between,
    Done,
}

impl<R: BufRead> GzipMembers<R> {
    pub(super) fn new(input: R) -> GzipMembers<R> {
        GzipMembers {
            input,
            inflate: Decompress::new(false),
            crc: crc32fast::Hasher::new(),
            at: Place::Start,
        }
    }

    /// Reads a member's header, leaving the input at its deflate data.
    fn header(&mut self) -> io::Result<()> {
        let mut fixed = [0u8; 10];
        self.input.read_exact(&mut fixed)?;
        if fixed[..3] != [0x1f, 0x8b, 8] || fixed[3] & FRESERVED != 0 {
            return Err(invalid("invalid gzip header"));
        }
        let flags = fixed[3];
        // The header's own check (FHCRC) covers every header byte before it.
        let mut seen = crc32fast::Hasher::new();
        seen.update(&fixed);
        if flags & FEXTRA != 0 {
            let mut xlen = [0u8; 2];
            self.input.read_exact(&mut xlen)?;
            seen.update(&xlen);
            let mut extra = vec![0u8; usize::from(u16::from_le_bytes(xlen))];
            self.input.read_exact(&mut extra)?;
            seen.update(&extra);
        }
        for field in [FNAME, FCOMMENT] {
            if flags & field != 0 {
                self.zero_terminated(&mut seen)?;
            }
        }
        if flags & FHCRC != 0 {
            let mut stored = [0u8; 2];
            self.input.read_exact(&mut stored)?;
            if u16::from_le_bytes(stored) != seen.finalize() as u16 {
                return Err(invalid("gzip header does not match its checksum"));
            }
        }
        self.inflate.reset(false);
        self.crc = crc32fast::Hasher::new();
        Ok(())
    }

    /// Skips a zero-terminated header field (a file name or comment).
    fn zero_terminated(&mut self, seen: &mut crc32fast::Hasher) -> io::Result<()> {
        loop {
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let (used, ended) = match memchr::memchr(0, buf) {
                Some(at) => (at + 1, true),
                None => (buf.len(), false),
            };
            seen.update(&buf[..used]);
            self.input.consume(used);
            if ended {
                return Ok(());
            }
        }
    }

    /// Reads a member's trailer and checks the member against it.
    fn trailer(&mut self) -> io::Result<()> {
        let mut trailer = [0u8; 8];
        self.input.read_exact(&mut trailer)?;
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let len = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        let sum = std::mem::take(&mut self.crc).finalize();
        // ISIZE is the length mod 2^32.
        if crc != sum || len != self.inflate.total_out() as u32 {
            return Err(invalid(
                "corrupt gzip stream does not have a matching checksum",
            ));
        }
        Ok(())
    }

    /// Inflates into `buf` what the input holds now: the bytes written (0 only at the
    /// member's end).
    fn inflate_into(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let input = self.input.fill_buf()?;
            let ended = input.is_empty();
            let (before_in, before_out) = (self.inflate.total_in(), self.inflate.total_out());
            let flush = if ended {
                FlushDecompress::Finish
            } else {
                FlushDecompress::None
            };
            // zlib-rs's own message for bad data can name a later call's state ("repeated
            // call with bad state"), not the data: say what flate2's reader says.
            let status = self
                .inflate
                .decompress(input, buf, flush)
                .map_err(|_| invalid("corrupt deflate stream"))?;
            let used = (self.inflate.total_in() - before_in) as usize;
            let wrote = (self.inflate.total_out() - before_out) as usize;
            self.input.consume(used);
            self.crc.update(&buf[..wrote]);
            if status == Status::StreamEnd {
                self.at = Place::Between;
                self.trailer()?;
                return Ok(wrote);
            }
            if wrote > 0 {
                return Ok(wrote);
            }
            if ended {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            // Input taken with no output yet (the inflater holds it): read on. Input
            // neither taken nor turned into output would loop forever.
            if used == 0 {
                return Err(invalid("deflate data that does not advance"));
            }
        }
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.at {
                Place::Start => {
                    self.header()?;
                    self.at = Place::Body;
                }
                Place::Between => {
                    // Another member, or the end of the file (as `gzip -d` and flate2's
                    // `MultiGzDecoder` read concatenated members).
                    if self.input.fill_buf()?.is_empty() {
                        self.at = Place::Done;
                        continue;
                    }
                    self.header()?;
                    self.at = Place::Body;
                }
                Place::Body => {
                    let wrote = self.inflate_into(buf)?;
                    if wrote > 0 {
                        return Ok(wrote);
                    }
                }
                Place::Done => return Ok(0),
            }
        }
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.to_string())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use flate2::write::{DeflateEncoder, GzEncoder};
    use flate2::Compression;

    use super::GzipMembers;

    fn inflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        // A small buffer, so members and trailers end at every offset of a read.
        let mut reader = GzipMembers::new(std::io::BufReader::with_capacity(7, bytes));
        let mut buf = [0u8; 13];
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn text(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| format!("{{\"ts\": {}, \"name\": \"k{}\"}},", i * 7, i % 13).into_bytes())
            .collect()
    }

    /// A member written by hand with every optional header field and the header's
    /// CRC-16 (flate2's writer sets no FHCRC).
    fn member_with_every_field(data: &[u8]) -> (Vec<u8>, usize) {
        let flags = super::FHCRC | super::FEXTRA | super::FNAME | super::FCOMMENT;
        let mut member = vec![0x1f, 0x8b, 8, flags, 7, 0, 0, 0, 0, 3];
        member.extend_from_slice(&5u16.to_le_bytes());
        member.extend_from_slice(&[1, 2, 3, 0, 5]);
        member.extend_from_slice(b"rank0.json\0from a test\0");
        let header_len = member.len();
        let crc16 = crc32fast::hash(&member) as u16;
        member.extend_from_slice(&crc16.to_le_bytes());
        let mut deflate = DeflateEncoder::new(Vec::new(), Compression::best());
        deflate.write_all(data).unwrap();
        member.extend_from_slice(&deflate.finish().unwrap());
        member.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
        member.extend_from_slice(&(data.len() as u32).to_le_bytes());
        (member, header_len)
    }

    #[test]
    fn members_are_read_in_turn_with_every_header_field() {
        let (a, b, c) = (text(500), text(3), text(2000));
        let (second, header_len) = member_with_every_field(&b);
        let bytes = [gzip(&a), second.clone(), gzip(&c)].concat();
        let want: Vec<u8> = [a, b, c].concat();
        assert_eq!(inflate(&bytes).unwrap(), want);
        // The same bytes through flate2's reader.
        let mut theirs = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut theirs)
            .unwrap();
        assert_eq!(theirs, want);

        // A header checksum that does not match.
        let mut bad = second;
        bad[header_len] ^= 1;
        let err = inflate(&bad).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("header"), "{err}");
    }

    #[test]
    fn a_cut_file_is_unexpected_eof_and_a_changed_one_invalid() {
        let data = text(3000);
        let bytes = gzip(&data);
        // Cut anywhere, the header and trailer included: the end comes too early.
        for cut in [
            0,
            1,
            5,
            10,
            11,
            bytes.len() / 2,
            bytes.len() - 8,
            bytes.len() - 1,
        ] {
            if cut == 0 {
                // No bytes at all: no header.
                let err = inflate(&[]).unwrap_err();
                assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
                continue;
            }
            let err = inflate(&bytes[..cut]).unwrap_err();
            assert_eq!(
                err.kind(),
                std::io::ErrorKind::UnexpectedEof,
                "cut at {cut}: {err}"
            );
        }
        // A changed trailer (CRC, then length): the checksum does not match.
        for at in [bytes.len() - 8, bytes.len() - 1] {
            let mut changed = bytes.clone();
            changed[at] ^= 0x40;
            let err = inflate(&changed).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "byte {at}");
            assert!(err.to_string().contains("checksum"), "{err}");
        }
        // Not gzip, another method, a reserved flag.
        for (at, value) in [(0, 0x1e), (2, 7), (3, 0x20)] {
            let mut changed = bytes.clone();
            changed[at] = value;
            let err = inflate(&changed).unwrap_err();
            assert_eq!(err.to_string(), "invalid gzip header");
        }
        // An empty member between two others ends nothing.
        let mut with_empty = gzip(&data[..100]);
        with_empty.extend_from_slice(&gzip(b""));
        with_empty.extend_from_slice(&gzip(&data[100..]));
        assert_eq!(inflate(&with_empty).unwrap(), data);
        // Trailing bytes that are not another member.
        let mut trailing = bytes.clone();
        trailing.extend_from_slice(b"\0\0\0\0\0\0\0\0\0\0\0\0");
        assert_eq!(
            inflate(&trailing).unwrap_err().to_string(),
            "invalid gzip header"
        );
    }
}
