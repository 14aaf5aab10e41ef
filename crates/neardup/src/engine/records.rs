//! On-disk encodings of the engine: log records and the snapshot body (hand-rolled, little
//! endian, versioned through the store's config blob and the snapshot magic).
//!
//! Log records (one per store record):
//! - `I | fp u64 | ts i64 | id bytes` — a document answered "unique" and stored;
//! - `R | id bytes` — a document removed by id;
//! - `F | floor i64` — documents with a timestamp below `floor` are gone (`max_docs` eviction);
//! - `S | ts i64 | id_len u32 | id bytes | sketch` — a document of the `auto` detector stored,
//!   with its encoded sketch ([`super::sketch`]); its arrival sequence is the record's LSN.
//!
//! Snapshot body of the simhash detector: `NDENGSN1 | floor i64 | entry* | u32::MAX | count
//! u64`, each entry `id_len u32 | fp u64 | ts i64 | id bytes`. Of the `auto` detector:
//! `NDENGSK1 | floor i64 | entry* | u32::MAX | count u64`, each entry `id_len u32 | seq u64 |
//! ts i64 | sketch_len u32 | id bytes | sketch`.

use std::io::{self, Write};

/// Magic bytes opening a snapshot body.
pub(crate) const SNAPSHOT_MAGIC: &[u8; 8] = b"NDENGSN1";
/// Magic bytes opening a snapshot body of the `auto` detector.
pub(crate) const SKETCH_SNAPSHOT_MAGIC: &[u8; 8] = b"NDENGSK1";

/// A decoded log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record<'a> {
    Insert {
        fp: u64,
        ts: i64,
        id: &'a str,
    },
    Remove {
        id: &'a str,
    },
    Floor {
        floor: i64,
    },
    Sketch {
        ts: i64,
        id: &'a str,
        sketch: &'a [u8],
    },
}

pub(crate) fn encode_sketch_insert(ts: i64, id: &str, sketch: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(13 + id.len() + sketch.len());
    v.push(b'S');
    v.extend_from_slice(&ts.to_le_bytes());
    v.extend_from_slice(&(id.len() as u32).to_le_bytes());
    v.extend_from_slice(id.as_bytes());
    v.extend_from_slice(sketch);
    v
}

pub(crate) fn encode_insert(fp: u64, ts: i64, id: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(17 + id.len());
    v.push(b'I');
    v.extend_from_slice(&fp.to_le_bytes());
    v.extend_from_slice(&ts.to_le_bytes());
    v.extend_from_slice(id.as_bytes());
    v
}

pub(crate) fn encode_remove(id: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 + id.len());
    v.push(b'R');
    v.extend_from_slice(id.as_bytes());
    v
}

pub(crate) fn encode_floor(floor: i64) -> Vec<u8> {
    let mut v = vec![b'F'];
    v.extend_from_slice(&floor.to_le_bytes());
    v
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Decodes a log record; `Err` names what is wrong.
pub(crate) fn decode(rec: &[u8]) -> Result<Record<'_>, String> {
    let str_at = |at: usize| {
        std::str::from_utf8(&rec[at..]).map_err(|_| "document id is not UTF-8".to_string())
    };
    match rec.first() {
        Some(b'I') if rec.len() >= 17 => Ok(Record::Insert {
            fp: u64_at(rec, 1).ok_or("short insert record")?,
            ts: u64_at(rec, 9).ok_or("short insert record")? as i64,
            id: str_at(17)?,
        }),
        Some(b'R') => Ok(Record::Remove { id: str_at(1)? }),
        Some(b'S') if rec.len() >= 13 => {
            let ts = u64_at(rec, 1).ok_or("short sketch record")? as i64;
            let len = u32_at(rec, 9).ok_or("short sketch record")? as usize;
            let id = rec
                .get(13..13 + len)
                .ok_or("sketch record's id cut short")?;
            let id = std::str::from_utf8(id).map_err(|_| "document id is not UTF-8".to_string())?;
            Ok(Record::Sketch {
                ts,
                id,
                sketch: &rec[13 + len..],
            })
        }
        Some(b'F') if rec.len() == 9 => Ok(Record::Floor {
            floor: u64_at(rec, 1).ok_or("short floor record")? as i64,
        }),
        Some(t) => Err(format!(
            "unknown or short record (tag {t:#04x}, {} bytes)",
            rec.len()
        )),
        None => Err("empty record".into()),
    }
}

/// Streams a snapshot body.
pub(crate) struct SnapshotWriter<'w> {
    w: &'w mut dyn Write,
    count: u64,
}

impl<'w> SnapshotWriter<'w> {
    pub(crate) fn begin(w: &'w mut dyn Write, magic: &[u8; 8], floor: i64) -> io::Result<Self> {
        w.write_all(magic)?;
        w.write_all(&floor.to_le_bytes())?;
        Ok(SnapshotWriter { w, count: 0 })
    }

    /// Appends one entry to `buf` (written out by [`flush`](Self::flush)).
    pub(crate) fn entry(buf: &mut Vec<u8>, fp: u64, ts: i64, id: &str) {
        buf.extend_from_slice(&(id.len() as u32).to_le_bytes());
        buf.extend_from_slice(&fp.to_le_bytes());
        buf.extend_from_slice(&ts.to_le_bytes());
        buf.extend_from_slice(id.as_bytes());
    }

    /// Appends one entry of the `auto` detector to `buf`.
    pub(crate) fn sketch_entry(buf: &mut Vec<u8>, seq: u64, ts: i64, id: &str, sketch: &[u8]) {
        buf.extend_from_slice(&(id.len() as u32).to_le_bytes());
        buf.extend_from_slice(&seq.to_le_bytes());
        buf.extend_from_slice(&ts.to_le_bytes());
        buf.extend_from_slice(&(sketch.len() as u32).to_le_bytes());
        buf.extend_from_slice(id.as_bytes());
        buf.extend_from_slice(sketch);
    }

    pub(crate) fn flush(&mut self, buf: &mut Vec<u8>, entries: u64) -> io::Result<()> {
        self.w.write_all(buf)?;
        buf.clear();
        self.count += entries;
        Ok(())
    }

    pub(crate) fn finish(self) -> io::Result<()> {
        self.w.write_all(&u32::MAX.to_le_bytes())?;
        self.w.write_all(&self.count.to_le_bytes())
    }
}

/// Reads the floor from a snapshot body's header, checking its magic.
pub(crate) fn snapshot_floor_of(b: &[u8], magic: &[u8; 8]) -> Result<i64, String> {
    if b.get(..8) != Some(&magic[..]) {
        return Err(format!(
            "snapshot body does not start with the engine magic {}",
            String::from_utf8_lossy(magic)
        ));
    }
    Ok(u64_at(b, 8).ok_or("snapshot ends in its header")? as i64)
}

/// Reads the floor from a snapshot body's header (simhash detector).
pub(crate) fn snapshot_floor(b: &[u8]) -> Result<i64, String> {
    snapshot_floor_of(b, SNAPSHOT_MAGIC)
}

/// A sketch snapshot's entry: `(seq, ts, id, sketch)`.
pub(crate) type SketchEntry<'a> = (u64, i64, &'a str, &'a [u8]);

/// Decodes a whole snapshot body of the `auto` detector: the floor and the entries.
pub(crate) fn decode_sketch_snapshot(b: &[u8]) -> Result<(i64, Vec<SketchEntry<'_>>), String> {
    let floor = snapshot_floor_of(b, SKETCH_SNAPSHOT_MAGIC)?;
    let mut at = FIRST_ENTRY;
    let mut out = Vec::new();
    loop {
        let len = u32_at(b, at).ok_or_else(|| format!("snapshot ends at byte {at}"))?;
        if len == u32::MAX {
            let count = u64_at(b, at + 4).ok_or("snapshot ends in its trailer")?;
            if count != out.len() as u64 || at + 12 != b.len() {
                return Err(format!(
                    "snapshot trailer says {count} entries, body holds {}",
                    out.len()
                ));
            }
            return Ok((floor, out));
        }
        let seq = u64_at(b, at + 4).ok_or("snapshot entry cut short")?;
        let ts = u64_at(b, at + 12).ok_or("snapshot entry cut short")? as i64;
        let slen = u32_at(b, at + 20).ok_or("snapshot entry cut short")? as usize;
        let start = at + 24;
        let id = b
            .get(start..start + len as usize)
            .ok_or("snapshot entry id cut short")?;
        let id = std::str::from_utf8(id).map_err(|_| "snapshot id is not UTF-8")?;
        let s0 = start + len as usize;
        let sketch = b
            .get(s0..s0 + slen)
            .ok_or("snapshot entry sketch cut short")?;
        out.push((seq, ts, id, sketch));
        at = s0 + slen;
    }
}

/// Offset of the first entry of a snapshot body.
pub(crate) const FIRST_ENTRY: usize = 16;

/// Walks a snapshot body (after [`snapshot_floor`]) checking its framing and trailer without
/// reading ids: calls `entry(offset, ts)` for each entry in order. Returns the entry count.
pub(crate) fn scan_snapshot(b: &[u8], mut entry: impl FnMut(usize, i64)) -> Result<u64, String> {
    let mut at = FIRST_ENTRY;
    let mut n = 0u64;
    loop {
        let len = u32_at(b, at).ok_or_else(|| format!("snapshot ends at byte {at}"))?;
        if len == u32::MAX {
            let count = u64_at(b, at + 4).ok_or("snapshot ends in its trailer")?;
            if count != n || at + 12 != b.len() {
                return Err(format!(
                    "snapshot trailer says {count} entries, body holds {n}"
                ));
            }
            return Ok(n);
        }
        let ts = u64_at(b, at + 12).ok_or("snapshot entry cut short")? as i64;
        at = (at + 20)
            .checked_add(len as usize)
            .filter(|&e| e <= b.len())
            .ok_or("snapshot entry id cut short")?;
        entry(at - 20 - len as usize, ts);
        n += 1;
    }
}

/// The entry at offset `at` of a body that [`scan_snapshot`] accepted: `(fp, ts, id, next)`.
/// Only the id's UTF-8 is left to check.
#[inline]
pub(crate) fn snapshot_entry(b: &[u8], at: usize) -> Result<(u64, i64, &str, usize), String> {
    let len = u32_at(b, at).ok_or("snapshot entry cut short")? as usize;
    let fp = u64_at(b, at + 4).ok_or("snapshot entry cut short")?;
    let ts = u64_at(b, at + 12).ok_or("snapshot entry cut short")? as i64;
    let id = b
        .get(at + 20..at + 20 + len)
        .ok_or("snapshot entry id cut short")?;
    let id = std::str::from_utf8(id).map_err(|_| "snapshot id is not UTF-8")?;
    Ok((fp, ts, id, at + 20 + len))
}

/// A snapshot's `(fp, ts, id)` entries.
#[cfg(test)]
type Entries<'a> = Vec<(u64, i64, &'a str)>;

/// Decodes a whole snapshot body: the floor and the entries (tests).
#[cfg(test)]
pub(crate) fn decode_snapshot(b: &[u8]) -> Result<(i64, Entries<'_>), String> {
    let floor = snapshot_floor(b)?;
    let mut offsets = Vec::new();
    scan_snapshot(b, |at, _| offsets.push(at))?;
    let entries = offsets
        .into_iter()
        .map(|at| snapshot_entry(b, at).map(|(fp, ts, id, _)| (fp, ts, id)))
        .collect::<Result<_, _>>()?;
    Ok((floor, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = encode_insert(7, -3, "a/b");
        assert_eq!(
            decode(&r).unwrap(),
            Record::Insert {
                fp: 7,
                ts: -3,
                id: "a/b"
            }
        );
        assert_eq!(
            decode(&encode_remove("x")).unwrap(),
            Record::Remove { id: "x" }
        );
        assert_eq!(
            decode(&encode_floor(99)).unwrap(),
            Record::Floor { floor: 99 }
        );
        assert!(decode(b"").is_err());
        assert!(decode(b"I123").is_err());
        assert!(decode(b"Z").is_err());
        assert!(decode(&[b'R', 0xff]).is_err());
        let r = encode_sketch_insert(-4, "id", b"xyz");
        assert_eq!(
            decode(&r).unwrap(),
            Record::Sketch {
                ts: -4,
                id: "id",
                sketch: b"xyz"
            }
        );
        for cut in 0..13 + 2 {
            assert!(decode(&r[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn sketch_snapshot_round_trip_and_damage() {
        let mut out = Vec::new();
        {
            let mut w = SnapshotWriter::begin(&mut out, SKETCH_SNAPSHOT_MAGIC, -5).unwrap();
            let mut buf = Vec::new();
            SnapshotWriter::sketch_entry(&mut buf, 7, 2, "one", b"ab");
            SnapshotWriter::sketch_entry(&mut buf, 9, 4, "two", b"");
            w.flush(&mut buf, 2).unwrap();
            w.finish().unwrap();
        }
        let (floor, entries) = decode_sketch_snapshot(&out).unwrap();
        assert_eq!(floor, -5);
        assert_eq!(
            entries,
            vec![(7, 2, "one", &b"ab"[..]), (9, 4, "two", &b""[..])]
        );
        for cut in 0..out.len() {
            assert!(decode_sketch_snapshot(&out[..cut]).is_err(), "cut at {cut}");
        }
        assert!(
            snapshot_floor(&out).is_err(),
            "a sketch snapshot is not read as a simhash one"
        );
    }

    #[test]
    fn snapshot_round_trip_and_damage() {
        let mut out = Vec::new();
        {
            let mut w = SnapshotWriter::begin(&mut out, SNAPSHOT_MAGIC, 5).unwrap();
            let mut buf = Vec::new();
            SnapshotWriter::entry(&mut buf, 1, 2, "one");
            SnapshotWriter::entry(&mut buf, 3, 4, "");
            w.flush(&mut buf, 2).unwrap();
            w.finish().unwrap();
        }
        let (floor, entries) = decode_snapshot(&out).unwrap();
        assert_eq!(floor, 5);
        assert_eq!(entries, vec![(1, 2, "one"), (3, 4, "")]);
        for cut in 0..out.len() {
            assert!(decode_snapshot(&out[..cut]).is_err(), "cut at {cut}");
        }
    }
}
