//! On-disk formats: file headers, record frames, snapshot trailer, file names.
//!
//! Every file starts with
//! `magic[8] | version u32 | lsn u64 | config_len u32 | config | header_crc u32`
//! (little endian; `header_crc` is the CRC32 of all preceding header bytes).
//! For a segment `lsn` is the LSN of its first record; for a snapshot it is
//! the LSN the snapshot covers.
//!
//! Log records follow the header as frames `len u32 | crc32(payload) u32 | payload`.
//! Snapshots follow the header with the body and a 16-byte trailer
//! `body_len u64 | crc32(body) u32 | b"NDSE"`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::Lsn;

/// Magic bytes of a log segment file.
pub(crate) const SEGMENT_MAGIC: [u8; 8] = *b"NDUP-LOG";
/// Magic bytes of a snapshot file.
pub(crate) const SNAPSHOT_MAGIC: [u8; 8] = *b"NDUP-SNP";
/// Magic bytes closing a snapshot trailer.
const TRAILER_MAGIC: [u8; 4] = *b"NDSE";
/// Length of the snapshot trailer.
pub(crate) const TRAILER_LEN: usize = 16;
/// Bytes of frame header (`len` + `crc`).
pub(crate) const FRAME_HEADER: usize = 8;
/// Fixed part of the file header before the config blob.
const HEADER_FIXED: usize = 8 + 4 + 8 + 4;

/// Format version written by this build; files with any other version are
/// rejected with [`Error::UnsupportedVersion`].
pub const FORMAT_VERSION: u32 = 1;
/// Largest accepted record payload (16 MiB).
pub const MAX_RECORD_BYTES: usize = 16 << 20;
/// Largest accepted configuration blob (1 MiB).
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// Encodes a file header.
pub(crate) fn encode_header(magic: &[u8; 8], lsn: Lsn, config: &[u8]) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_FIXED + config.len() + 4);
    h.extend_from_slice(magic);
    h.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    h.extend_from_slice(&lsn.to_le_bytes());
    h.extend_from_slice(&(config.len() as u32).to_le_bytes());
    h.extend_from_slice(config);
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

/// Length of a header carrying `config`.
pub(crate) fn header_len(config: &[u8]) -> usize {
    HEADER_FIXED + config.len() + 4
}

/// A decoded, verified file header.
pub(crate) struct Header<'a> {
    pub lsn: Lsn,
    pub config: &'a [u8],
    pub len: usize,
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Decodes and verifies the header at the start of `data`.
pub(crate) fn decode_header<'a>(
    data: &'a [u8],
    magic: &[u8; 8],
    path: &Path,
) -> Result<Header<'a>> {
    if data.len() < 8 || &data[..8] != magic {
        return Err(Error::NotStoreFile { path: path.into() });
    }
    let corrupt = |reason: &str| Error::CorruptHeader {
        path: path.into(),
        reason: reason.into(),
    };
    if data.len() < 12 {
        return Err(corrupt("file ends inside the header"));
    }
    let version = le_u32(&data[8..12]);
    if version != FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            path: path.into(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if data.len() < HEADER_FIXED {
        return Err(corrupt("file ends inside the header"));
    }
    let lsn = le_u64(&data[12..20]);
    let config_len = le_u32(&data[20..24]) as usize;
    if config_len > MAX_CONFIG_BYTES {
        return Err(corrupt("config length is larger than 1 MiB"));
    }
    let len = HEADER_FIXED + config_len + 4;
    if data.len() < len {
        return Err(corrupt("file ends inside the header"));
    }
    let stored = le_u32(&data[len - 4..len]);
    if crc32fast::hash(&data[..len - 4]) != stored {
        return Err(corrupt("header checksum mismatch"));
    }
    Ok(Header {
        lsn,
        config: &data[HEADER_FIXED..HEADER_FIXED + config_len],
        len,
    })
}

/// Appends one record frame for `payload` to `buf`.
pub(crate) fn encode_frame(buf: &mut Vec<u8>, payload: &[u8]) {
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Result of scanning the frames of one segment.
pub(crate) struct Scan {
    /// Number of valid frames.
    pub count: u64,
    /// Offset just past the last valid frame.
    pub end: usize,
    /// First invalid frame: offset and reason, if the scan stopped early.
    pub bad: Option<(usize, &'static str)>,
}

/// Parses the frame at `off`; returns the payload range or why it is invalid.
#[inline]
pub(crate) fn frame_at(
    data: &[u8],
    off: usize,
) -> std::result::Result<(usize, usize), &'static str> {
    let rest = data.len() - off;
    if rest < FRAME_HEADER {
        return Err("file ends inside a frame header");
    }
    let len = le_u32(&data[off..off + 4]) as usize;
    if len == 0 || len > MAX_RECORD_BYTES {
        return Err("impossible record length");
    }
    if rest - FRAME_HEADER < len {
        return Err("file ends inside a record payload");
    }
    Ok((off + FRAME_HEADER, off + FRAME_HEADER + len))
}

/// Scans and CRC-checks all frames from `start`.
pub(crate) fn scan_frames(data: &[u8], start: usize) -> Scan {
    let mut off = start;
    let mut count = 0;
    while off < data.len() {
        match frame_at(data, off) {
            Ok((p, e)) => {
                let stored = le_u32(&data[off + 4..off + 8]);
                if crc32fast::hash(&data[p..e]) != stored {
                    return Scan {
                        count,
                        end: off,
                        bad: Some((off, "record checksum mismatch")),
                    };
                }
                off = e;
                count += 1;
            }
            Err(reason) => {
                return Scan {
                    count,
                    end: off,
                    bad: Some((off, reason)),
                }
            }
        }
    }
    Scan {
        count,
        end: off,
        bad: None,
    }
}

/// Encodes a snapshot trailer.
pub(crate) fn encode_trailer(body_len: u64, crc: u32) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[..8].copy_from_slice(&body_len.to_le_bytes());
    t[8..12].copy_from_slice(&crc.to_le_bytes());
    t[12..].copy_from_slice(&TRAILER_MAGIC);
    t
}

/// Decodes a snapshot trailer into `(body_len, crc)`; `None` if the magic is wrong.
pub(crate) fn decode_trailer(t: &[u8]) -> Option<(u64, u32)> {
    if t.len() != TRAILER_LEN || t[12..] != TRAILER_MAGIC {
        return None;
    }
    Some((le_u64(&t[..8]), le_u32(&t[8..12])))
}

/// File name of the segment whose first record has LSN `base`.
pub(crate) fn segment_name(base: Lsn) -> String {
    format!("log-{base:020}.seg")
}

/// File name of the snapshot covering LSN `lsn`.
pub(crate) fn snapshot_name(lsn: Lsn) -> String {
    format!("snapshot-{lsn:020}.snap")
}

/// Kinds of directory entries the store recognises.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    Lock,
    Segment(Lsn),
    Snapshot(Lsn),
    /// Leftover temporary file from an interrupted rotation or snapshot.
    Temp,
    Unknown,
}

fn parse_num(s: &str) -> Option<Lsn> {
    if s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Classifies a directory entry by name.
pub(crate) fn classify(name: &str) -> Entry {
    if name == "LOCK" {
        return Entry::Lock;
    }
    if let Some(stem) = name.strip_suffix(".tmp") {
        if classify(stem) != Entry::Unknown && stem != "LOCK" {
            return Entry::Temp;
        }
        return Entry::Unknown;
    }
    if let Some(n) = name
        .strip_prefix("log-")
        .and_then(|s| s.strip_suffix(".seg"))
    {
        if let Some(lsn) = parse_num(n) {
            return Entry::Segment(lsn);
        }
    }
    if let Some(n) = name
        .strip_prefix("snapshot-")
        .and_then(|s| s.strip_suffix(".snap"))
    {
        if let Some(lsn) = parse_num(n) {
            return Entry::Snapshot(lsn);
        }
    }
    Entry::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_checks() {
        let p = Path::new("x");
        let h = encode_header(&SEGMENT_MAGIC, 42, b"cfg");
        assert_eq!(h.len(), header_len(b"cfg"));
        let d = decode_header(&h, &SEGMENT_MAGIC, p).unwrap();
        assert_eq!((d.lsn, d.config, d.len), (42, &b"cfg"[..], h.len()));
        assert!(matches!(
            decode_header(&h, &SNAPSHOT_MAGIC, p),
            Err(Error::NotStoreFile { .. })
        ));
        for cut in 0..h.len() {
            assert!(decode_header(&h[..cut], &SEGMENT_MAGIC, p).is_err());
        }
        let mut bad = h.clone();
        bad[21] ^= 1;
        assert!(matches!(
            decode_header(&bad, &SEGMENT_MAGIC, p),
            Err(Error::CorruptHeader { .. })
        ));
        let mut newer = h;
        newer[8] = 2;
        assert!(matches!(
            decode_header(&newer, &SEGMENT_MAGIC, p),
            Err(Error::UnsupportedVersion { found: 2, .. })
        ));
    }

    #[test]
    fn names() {
        assert_eq!(classify(&segment_name(7)), Entry::Segment(7));
        assert_eq!(classify(&snapshot_name(9)), Entry::Snapshot(9));
        assert_eq!(classify(&(snapshot_name(9) + ".tmp")), Entry::Temp);
        assert_eq!(classify("LOCK"), Entry::Lock);
        assert_eq!(classify("log-1.seg"), Entry::Unknown);
        assert_eq!(classify("notes.txt"), Entry::Unknown);
    }

    #[test]
    fn frames() {
        let mut b = vec![0u8; 3];
        encode_frame(&mut b, b"hello");
        encode_frame(&mut b, b"w");
        let s = scan_frames(&b, 3);
        assert_eq!((s.count, s.end, s.bad), (2, b.len(), None));
        b.push(0);
        let s = scan_frames(&b, 3);
        assert_eq!(s.count, 2);
        assert!(s.bad.is_some());
    }
}
