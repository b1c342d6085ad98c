//! The structure check a plugin file passes before it is ever mapped.
//!
//! `dlopen` maps a library's `PT_LOAD` segments as the program headers describe them,
//! without comparing them to the file's size. A file cut short (a copy interrupted, a
//! full disk) maps pages past its end, and the first touch of one is a SIGBUS: the
//! process dies with exit 135 and prints nothing, whichever command was running. So
//! every candidate is read here first: a regular file of a sane size, an ELF header of
//! this machine's class, byte order and architecture, and every program header's file
//! range inside the file. A file that fails is rejected with the reason and never opened
//! by the loader.
//!
//! This checks structure only. A well-formed library runs whatever code it holds with
//! the user's rights; the permission warnings (`super::trust`) are about who may have put
//! it there. A file rewritten between this check and `dlopen` is not defended against.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// A plugin library larger than this is refused unread (the engine plugins are ~10 MB
/// in a debug build).
pub const MAX_LIBRARY_BYTES: u64 = 1 << 30;

/// More program headers than this is not a library a linker wrote.
const MAX_PROGRAM_HEADERS: u64 = 4096;

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
const ELFCLASS32: u8 = 1;
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const ELFDATA2MSB: u8 = 2;
const ET_DYN: u16 = 3;
const PT_LOAD: u32 = 1;

/// Why `path` must not be mapped, as the rest of the sentence "not a loadable plugin
/// library: …"; `Ok` when its structure is sound.
pub fn check(path: &Path) -> Result<(), String> {
    let mut file = open_regular(path)?;
    let size = file
        .metadata()
        .map_err(|e| format!("cannot read its metadata: {e}"))?
        .len();
    if size > MAX_LIBRARY_BYTES {
        return Err(format!(
            "it is {size} bytes, more than the {MAX_LIBRARY_BYTES}-byte limit for a plugin"
        ));
    }
    if cfg!(all(unix, not(target_vendor = "apple"))) {
        check_elf(&mut file, size)
    } else {
        Ok(())
    }
}

/// Opens `path` for reading without blocking (a FIFO swapped in after the directory
/// listing must not hang the host) and insists on a regular file.
fn open_regular(path: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot open it: {e}"))?;
    let kind = file
        .metadata()
        .map_err(|e| format!("cannot read its metadata: {e}"))?
        .file_type();
    if kind.is_file() {
        Ok(file)
    } else {
        Err("not a regular file".to_string())
    }
}

/// The ELF identity and header fields the check uses.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    wide: bool,
    little_endian: bool,
    kind: u16,
    machine: u16,
    phoff: u64,
    phentsize: u64,
    phnum: u64,
    shoff: u64,
    shentsize: u64,
    shnum: u64,
}

fn check_elf(file: &mut File, size: u64) -> Result<(), String> {
    let mut bytes = [0u8; 64];
    let got = read_up_to(file, &mut bytes).map_err(|e| format!("cannot read it: {e}"))?;
    let header = parse_header(&bytes[..got], size)?;
    check_header(&header, size)?;
    let table_len = header.phentsize * header.phnum;
    let mut table = vec![0u8; table_len as usize];
    file.seek(SeekFrom::Start(header.phoff))
        .and_then(|_| file.read_exact(&mut table))
        .map_err(|e| format!("cannot read its program headers: {e}"))?;
    for (i, entry) in table.chunks_exact(header.phentsize as usize).enumerate() {
        check_segment(&header, i, entry, size)?;
    }
    check_section_table(&header, size)
}

/// Reads until `buf` is full or the file ends; the number of bytes read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// The header fields of `bytes` (the file's first bytes), refusing anything that is not
/// an ELF file of this host's class and byte order.
fn parse_header(bytes: &[u8], size: u64) -> Result<Header, String> {
    if bytes.len() < 16 || &bytes[..4] != ELF_MAGIC {
        return Err(format!("no ELF header (the file is {size} bytes)"));
    }
    let wide = match bytes[4] {
        ELFCLASS64 => true,
        ELFCLASS32 => false,
        other => return Err(format!("unknown ELF class {other}")),
    };
    if wide != cfg!(target_pointer_width = "64") {
        return Err(format!(
            "a {}-bit ELF file, and this host is {}-bit",
            if wide { 64 } else { 32 },
            usize::BITS
        ));
    }
    let little_endian = match bytes[5] {
        ELFDATA2LSB => true,
        ELFDATA2MSB => false,
        other => return Err(format!("unknown ELF byte order {other}")),
    };
    if little_endian != cfg!(target_endian = "little") {
        return Err("an ELF file of the other byte order".to_string());
    }
    let needed = if wide { 64 } else { 52 };
    if bytes.len() < needed {
        return Err(format!(
            "its ELF header is cut short (the file is {size} bytes)"
        ));
    }
    let field = Fields {
        bytes,
        little_endian,
    };
    let (kind, machine) = (field.u16(16), field.u16(18));
    Ok(if wide {
        Header {
            wide,
            little_endian,
            kind,
            machine,
            phoff: field.u64(32),
            shoff: field.u64(40),
            phentsize: field.u16(54).into(),
            phnum: field.u16(56).into(),
            shentsize: field.u16(58).into(),
            shnum: field.u16(60).into(),
        }
    } else {
        Header {
            wide,
            little_endian,
            kind,
            machine,
            phoff: field.u32(28).into(),
            shoff: field.u32(32).into(),
            phentsize: field.u16(42).into(),
            phnum: field.u16(44).into(),
            shentsize: field.u16(46).into(),
            shnum: field.u16(48).into(),
        }
    })
}

/// A shared object for this machine whose header tables lie inside the file.
fn check_header(h: &Header, size: u64) -> Result<(), String> {
    if h.kind != ET_DYN {
        return Err(format!(
            "ELF type {} is not a shared library (type {ET_DYN})",
            h.kind
        ));
    }
    if let Some(host) = host_machine() {
        if h.machine != host {
            return Err(format!(
                "built for ELF machine {}, and this host is machine {host} ({})",
                h.machine,
                std::env::consts::ARCH
            ));
        }
    }
    let entry = if h.wide { 56 } else { 32 };
    if h.phnum == 0 || h.phnum > MAX_PROGRAM_HEADERS || h.phentsize < entry {
        return Err(format!(
            "its program header table is malformed ({} entries of {} bytes)",
            h.phnum, h.phentsize
        ));
    }
    within(size, h.phoff, h.phentsize * h.phnum).map_err(|end| {
        format!("its program headers end at byte {end}, past the end of the file ({size} bytes)")
    })?;
    Ok(())
}

/// Section headers are not read by the loader, but a table past the end says the file
/// was cut short.
fn check_section_table(h: &Header, size: u64) -> Result<(), String> {
    if h.shnum == 0 {
        return Ok(());
    }
    within(size, h.shoff, h.shentsize.saturating_mul(h.shnum)).map_err(|end| {
        format!("its section headers end at byte {end}, past the end of the file ({size} bytes): cut short?")
    })
}

/// Program header `i`: a loadable segment's file range must lie inside the file, and it
/// may not claim more file bytes than memory.
fn check_segment(h: &Header, i: usize, entry: &[u8], size: u64) -> Result<(), String> {
    let field = Fields {
        bytes: entry,
        little_endian: h.little_endian,
    };
    let kind = field.u32(0);
    let (offset, filesz, memsz) = if h.wide {
        (field.u64(8), field.u64(32), field.u64(40))
    } else {
        (
            field.u32(4).into(),
            field.u32(16).into(),
            field.u32(20).into(),
        )
    };
    if kind != PT_LOAD {
        return Ok(());
    }
    if filesz > memsz {
        return Err(format!(
            "loadable segment {i} holds {filesz} file bytes in {memsz} bytes of memory"
        ));
    }
    within(size, offset, filesz).map_err(|end| {
        format!("loadable segment {i} ends at byte {end}, past the end of the file ({size} bytes): cut short?")
    })
}

/// `Ok` when `[offset, offset + len)` lies inside a file of `size` bytes; else where it
/// ends (saturated).
fn within(size: u64, offset: u64, len: u64) -> Result<(), u64> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        Some(end) => Err(end),
        None => Err(u64::MAX),
    }
}

/// `e_machine` of libraries this host can load; `None` for an architecture not listed
/// (the machine is then left to `dlopen`).
fn host_machine() -> Option<u16> {
    Some(match std::env::consts::ARCH {
        "x86" => 3,
        "arm" => 40,
        "x86_64" => 62,
        "aarch64" => 183,
        "riscv64" | "riscv32" => 243,
        "powerpc64" => 21,
        "s390x" => 22,
        "loongarch64" => 258,
        _ => return None,
    })
}

/// Fixed-offset reads in the file's byte order (offsets are checked by the callers'
/// length checks).
struct Fields<'a> {
    bytes: &'a [u8],
    little_endian: bool,
}

impl Fields<'_> {
    fn take<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.bytes[at..at + N]);
        out
    }

    fn u16(&self, at: usize) -> u16 {
        let b = self.take(at);
        if self.little_endian {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }

    fn u32(&self, at: usize) -> u32 {
        let b = self.take(at);
        if self.little_endian {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    }

    fn u64(&self, at: usize) -> u64 {
        let b = self.take(at);
        if self.little_endian {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running test binary is an ELF file of this machine: a real header to bend.
    fn own_bytes() -> Vec<u8> {
        std::fs::read(std::env::current_exe().unwrap()).unwrap()
    }

    fn check_bytes(bytes: &[u8]) -> Result<(), String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libllm_triage_plugin_x.so");
        std::fs::write(&path, bytes).unwrap();
        check(&path)
    }

    /// The test binary as a shared object (a PIE is `ET_EXEC` or `ET_DYN`; make it DYN).
    fn as_library(mut bytes: Vec<u8>) -> Vec<u8> {
        let t = ET_DYN.to_ne_bytes();
        bytes[16..18].copy_from_slice(&t);
        bytes
    }

    #[test]
    fn a_whole_elf_library_passes() {
        assert_eq!(check_bytes(&as_library(own_bytes())), Ok(()));
    }

    #[test]
    fn a_cut_library_names_the_segment_past_the_end() {
        let bytes = as_library(own_bytes());
        let half = &bytes[..bytes.len() / 2];
        let err = check_bytes(half).unwrap_err();
        assert!(
            err.contains("past the end of the file")
                && err.contains(&format!("{} bytes", half.len())),
            "{err}"
        );
        // Cut inside the header itself.
        let err = check_bytes(&bytes[..40]).unwrap_err();
        assert!(err.contains("ELF header is cut short"), "{err}");
    }

    #[test]
    fn foreign_and_empty_files_are_refused() {
        assert_eq!(
            check_bytes(b"").unwrap_err(),
            "no ELF header (the file is 0 bytes)"
        );
        assert!(check_bytes(b"#!/bin/sh\n")
            .unwrap_err()
            .starts_with("no ELF header"));
        let mut other_machine = as_library(own_bytes());
        other_machine[18..20].copy_from_slice(&9999u16.to_ne_bytes());
        let err = check_bytes(&other_machine).unwrap_err();
        assert!(err.contains("built for ELF machine 9999"), "{err}");
        let mut other_class = as_library(own_bytes());
        other_class[4] = if cfg!(target_pointer_width = "64") {
            1
        } else {
            2
        };
        assert!(check_bytes(&other_class)
            .unwrap_err()
            .contains("-bit ELF file"));
        let mut executable = own_bytes();
        executable[16..18].copy_from_slice(&2u16.to_ne_bytes());
        assert!(check_bytes(&executable)
            .unwrap_err()
            .contains("not a shared library"));
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_header_pointing_past_the_end_is_refused() {
        let mut bytes = as_library(own_bytes());
        let len = bytes.len() as u64;
        bytes[32..40].copy_from_slice(&(len - 8).to_ne_bytes());
        let err = check_bytes(&bytes).unwrap_err();
        assert!(err.contains("program headers end at byte"), "{err}");
        // An offset that overflows when the table's length is added.
        bytes[32..40].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert!(check_bytes(&bytes)
            .unwrap_err()
            .contains("program headers end at byte"));
    }

    #[test]
    fn directories_are_not_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check(dir.path()), Err("not a regular file".to_string()));
    }
}
