//! On-disk encodings of the engine: log records and the snapshot body (hand-rolled, little
//! endian, versioned through the store's config blob and the snapshot magic).
//!
//! Log records (one per store record):
//! - `I | fp u64 | ts i64 | id bytes` — a document answered "unique" and stored;
//! - `R | id bytes` — a document removed by id;
//! - `F | floor i64` — documents with a timestamp below `floor` are gone (`max_docs` eviction).
//!
//! Snapshot body: `NDENGSN1 | floor i64 | entry* | u32::MAX | count u64`, each entry
//! `id_len u32 | fp u64 | ts i64 | id bytes`.

use std::io::{self, Write};

/// Magic bytes opening a snapshot body.
pub(crate) const SNAPSHOT_MAGIC: &[u8; 8] = b"NDENGSN1";

/// A decoded log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record<'a> {
    Insert { fp: u64, ts: i64, id: &'a str },
    Remove { id: &'a str },
    Floor { floor: i64 },
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
    pub(crate) fn begin(w: &'w mut dyn Write, floor: i64) -> io::Result<Self> {
        w.write_all(SNAPSHOT_MAGIC)?;
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

/// A decoded snapshot: the floor and `(fp, ts, id)` entries.
pub(crate) struct SnapshotBody<'a> {
    pub floor: i64,
    pub entries: Vec<(u64, i64, &'a str)>,
}

pub(crate) fn decode_snapshot(b: &[u8]) -> Result<SnapshotBody<'_>, String> {
    if b.get(..8) != Some(&SNAPSHOT_MAGIC[..]) {
        return Err("snapshot body does not start with the engine magic NDENGSN1".into());
    }
    let floor = u64_at(b, 8).ok_or("snapshot ends in its header")? as i64;
    let mut at = 16;
    let mut entries = Vec::new();
    loop {
        let len = u32_at(b, at).ok_or_else(|| format!("snapshot ends at byte {at}"))?;
        if len == u32::MAX {
            let count = u64_at(b, at + 4).ok_or("snapshot ends in its trailer")?;
            if count != entries.len() as u64 || at + 12 != b.len() {
                return Err(format!(
                    "snapshot trailer says {count} entries, body holds {}",
                    entries.len()
                ));
            }
            return Ok(SnapshotBody { floor, entries });
        }
        let fp = u64_at(b, at + 4).ok_or("snapshot entry cut short")?;
        let ts = u64_at(b, at + 12).ok_or("snapshot entry cut short")? as i64;
        let start = at + 20;
        let end = start
            .checked_add(len as usize)
            .filter(|&e| e <= b.len())
            .ok_or("snapshot entry id cut short")?;
        let id = std::str::from_utf8(&b[start..end]).map_err(|_| "snapshot id is not UTF-8")?;
        entries.push((fp, ts, id));
        at = end;
    }
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
    }

    #[test]
    fn snapshot_round_trip_and_damage() {
        let mut out = Vec::new();
        {
            let mut w = SnapshotWriter::begin(&mut out, 5).unwrap();
            let mut buf = Vec::new();
            SnapshotWriter::entry(&mut buf, 1, 2, "one");
            SnapshotWriter::entry(&mut buf, 3, 4, "");
            w.flush(&mut buf, 2).unwrap();
            w.finish().unwrap();
        }
        let s = decode_snapshot(&out).unwrap();
        assert_eq!(s.floor, 5);
        assert_eq!(s.entries, vec![(1, 2, "one"), (3, 4, "")]);
        for cut in 0..out.len() {
            assert!(decode_snapshot(&out[..cut]).is_err(), "cut at {cut}");
        }
    }
}
