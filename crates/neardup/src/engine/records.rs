//! On-disk encodings of the engine: log records and the snapshot body (hand-rolled, little
//! endian, versioned through the store's config blob and the snapshot magic).
//!
//! Log records (one per store record):
//! - `I | fp u64 | ts i64 | id bytes` — a document answered "unique" and stored;
//! - `R | id bytes` — a document removed by id;
//! - `F | floor i64` — documents with a timestamp below `floor` are gone (`max_docs` eviction);
//! - `S | ts i64 | id_len u32 | id bytes | sketch` — a document of the `auto` detector stored,
//!   with its encoded sketch ([`super::sketch`]); its arrival sequence is the record's LSN;
//! - `L | ts i64 | n u32 | key u64×n` — under the template veto, the counted lines of a
//!   document answered "duplicate" (not of an identical text): they count as a stored
//!   document's do until its time segment expires ([`super::veto`]);
//! - `M | ts i64 | n u32 | key u64×n` — the lines of an `L` record taken back out (a shared
//!   log refused the decision that counted them).
//!
//! Snapshot body of the simhash detector: `NDENGSN1 | floor i64 | entry* | u32::MAX | count
//! u64`, each entry `id_len u32 | fp u64 | ts i64 | id bytes`. Of the `auto` detector:
//! `NDENGSK2 | floor i64 | entry* | u32::MAX | count u64 | segments u32 | observed*`, each
//! entry `id_len u32 | seq u64 | ts i64 | sketch_len u32 | id bytes | sketch`, each `observed`
//! one time segment's counted lines of duplicates, `segment i64 | n u32 | (key u64 | count
//! u32)×n`. `NDENGSK1` (read, never written) is the same without the observed lines.

use std::io::{self, Write};

/// Magic bytes opening a snapshot body.
pub(crate) const SNAPSHOT_MAGIC: &[u8; 8] = b"NDENGSN1";
/// Magic bytes opening a snapshot body of the `auto` detector.
pub(crate) const SKETCH_SNAPSHOT_MAGIC: &[u8; 8] = b"NDENGSK2";
/// The `auto` detector's snapshot before it held the observed lines (read only).
pub(crate) const SKETCH_SNAPSHOT_MAGIC_V1: &[u8; 8] = b"NDENGSK1";

/// One time segment's counted lines of duplicates: `(segment, [(line key, documents)])`.
pub(crate) type Observed = (i64, Vec<(u64, u32)>);

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
    /// Lines of a duplicate counted (`back`: taken back out).
    Lines {
        ts: i64,
        keys: Vec<u64>,
        back: bool,
    },
}

/// The record of a duplicate's counted `lines` (`back`: taken back out).
pub(crate) fn encode_lines(ts: i64, lines: &[u64], back: bool) -> Vec<u8> {
    let mut v = Vec::with_capacity(13 + 8 * lines.len());
    v.push(if back { b'M' } else { b'L' });
    v.extend_from_slice(&ts.to_le_bytes());
    v.extend_from_slice(&(lines.len() as u32).to_le_bytes());
    for k in lines {
        v.extend_from_slice(&k.to_le_bytes());
    }
    v
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
        Some(&tag @ (b'L' | b'M')) if rec.len() >= 13 => {
            let ts = u64_at(rec, 1).ok_or("short lines record")? as i64;
            let n = u32_at(rec, 9).ok_or("short lines record")? as usize;
            if rec.len() != 13 + 8 * n {
                return Err(format!(
                    "lines record holds {} bytes, not the {} of {n} keys",
                    rec.len(),
                    13 + 8 * n
                ));
            }
            Ok(Record::Lines {
                ts,
                keys: (0..n)
                    .map(|i| u64_at(rec, 13 + 8 * i).expect("length checked"))
                    .collect(),
                back: tag == b'M',
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

    /// [`finish`](Self::finish) for the `auto` detector: the trailer, then each segment's
    /// observed lines.
    pub(crate) fn finish_observed(self, observed: &[Observed]) -> io::Result<()> {
        let w = &mut *self.w;
        w.write_all(&u32::MAX.to_le_bytes())?;
        w.write_all(&self.count.to_le_bytes())?;
        w.write_all(&(observed.len() as u32).to_le_bytes())?;
        let mut buf = Vec::new();
        for (segment, lines) in observed {
            buf.clear();
            buf.extend_from_slice(&segment.to_le_bytes());
            buf.extend_from_slice(&(lines.len() as u32).to_le_bytes());
            for (k, n) in lines {
                buf.extend_from_slice(&k.to_le_bytes());
                buf.extend_from_slice(&n.to_le_bytes());
            }
            w.write_all(&buf)?;
        }
        Ok(())
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

/// A decoded snapshot body of the `auto` detector: the floor, the entries and each segment's
/// observed lines.
pub(crate) type SketchSnapshot<'a> = (i64, Vec<SketchEntry<'a>>, Vec<Observed>);

/// Decodes a whole snapshot body of the `auto` detector (`NDENGSK2`, or `NDENGSK1`, which
/// has no observed lines).
pub(crate) fn decode_sketch_snapshot(b: &[u8]) -> Result<SketchSnapshot<'_>, String> {
    let v1 = b.get(..8) == Some(&SKETCH_SNAPSHOT_MAGIC_V1[..]);
    let floor = snapshot_floor_of(
        b,
        if v1 {
            SKETCH_SNAPSHOT_MAGIC_V1
        } else {
            SKETCH_SNAPSHOT_MAGIC
        },
    )?;
    let mut at = FIRST_ENTRY;
    let mut out = Vec::new();
    loop {
        let len = u32_at(b, at).ok_or_else(|| format!("snapshot ends at byte {at}"))?;
        if len == u32::MAX {
            let count = u64_at(b, at + 4).ok_or("snapshot ends in its trailer")?;
            let observed = if v1 {
                Vec::new()
            } else {
                decode_observed(b, at + 12)?
            };
            if count != out.len() as u64 || (v1 && at + 12 != b.len()) {
                return Err(format!(
                    "snapshot trailer says {count} entries, body holds {}",
                    out.len()
                ));
            }
            return Ok((floor, out, observed));
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

/// The observed lines that end a sketch snapshot, from `at` to the end of `b`.
fn decode_observed(b: &[u8], mut at: usize) -> Result<Vec<Observed>, String> {
    let short = || "snapshot's observed lines cut short".to_string();
    let n = u32_at(b, at).ok_or_else(short)? as usize;
    at += 4;
    let mut out = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let segment = u64_at(b, at).ok_or_else(short)? as i64;
        let m = u32_at(b, at + 8).ok_or_else(short)? as usize;
        at += 12;
        let end = m
            .checked_mul(12)
            .and_then(|l| at.checked_add(l))
            .filter(|&e| e <= b.len())
            .ok_or_else(short)?;
        let lines = (0..m)
            .map(|i| {
                let p = at + 12 * i;
                (
                    u64_at(b, p).expect("bounds checked"),
                    u32_at(b, p + 8).expect("bounds checked"),
                )
            })
            .collect();
        at = end;
        out.push((segment, lines));
    }
    if at != b.len() {
        return Err(format!(
            "snapshot holds {} bytes after its observed lines",
            b.len() - at
        ));
    }
    Ok(out)
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
        for back in [false, true] {
            let r = encode_lines(-7, &[3, u64::MAX], back);
            assert_eq!(
                decode(&r).unwrap(),
                Record::Lines {
                    ts: -7,
                    keys: vec![3, u64::MAX],
                    back
                }
            );
            for cut in 0..r.len() {
                assert!(decode(&r[..cut]).is_err(), "cut at {cut}");
            }
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
            w.finish_observed(&[(3, vec![(11, 2), (12, 1)]), (-1, vec![])])
                .unwrap();
        }
        let (floor, entries, observed) = decode_sketch_snapshot(&out).unwrap();
        assert_eq!(floor, -5);
        assert_eq!(
            entries,
            vec![(7, 2, "one", &b"ab"[..]), (9, 4, "two", &b""[..])]
        );
        assert_eq!(observed, vec![(3, vec![(11, 2), (12, 1)]), (-1, vec![])]);
        let mut longer = out.clone();
        longer.push(0);
        assert!(decode_sketch_snapshot(&longer).is_err());
        for cut in 0..out.len() {
            assert!(decode_sketch_snapshot(&out[..cut]).is_err(), "cut at {cut}");
        }
        assert!(
            snapshot_floor(&out).is_err(),
            "a sketch snapshot is not read as a simhash one"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// Damaged or foreign bytes are an error, never a panic; lines records and observed
        /// lines round-trip.
        #[test]
        fn lines_records_and_observed_lines_round_trip_and_bad_bytes_are_errors(
            junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            tag in proptest::sample::select(vec![b'L', b'M', b'S', b'I', b'R', b'F']),
            ts in proptest::prelude::any::<i64>(),
            keys in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..20),
            observed in proptest::collection::vec(
                (proptest::prelude::any::<i64>(), proptest::collection::vec((proptest::prelude::any::<u64>(), 1u32..9), 0..5)),
                0..4,
            ),
        ) {
            let mut rec = vec![tag];
            rec.extend_from_slice(&junk);
            let _ = decode(&rec);
            let _ = decode_sketch_snapshot(&rec);
            let mut body = SKETCH_SNAPSHOT_MAGIC.to_vec();
            body.extend_from_slice(&junk);
            let _ = decode_sketch_snapshot(&body);

            let back = tag == b'M';
            let r = encode_lines(ts, &keys, back);
            proptest::prop_assert_eq!(decode(&r).unwrap(), Record::Lines { ts, keys, back });

            let mut out = Vec::new();
            {
                let w = SnapshotWriter::begin(&mut out, SKETCH_SNAPSHOT_MAGIC, ts).unwrap();
                w.finish_observed(&observed).unwrap();
            }
            let (floor, entries, got) = decode_sketch_snapshot(&out).unwrap();
            proptest::prop_assert_eq!((floor, entries.len()), (ts, 0));
            proptest::prop_assert_eq!(got, observed);
        }
    }

    #[test]
    fn sketch_snapshots_without_observed_lines_are_still_read() {
        let mut out = Vec::new();
        {
            let mut w = SnapshotWriter::begin(&mut out, SKETCH_SNAPSHOT_MAGIC_V1, 1).unwrap();
            let mut buf = Vec::new();
            SnapshotWriter::sketch_entry(&mut buf, 7, 2, "one", b"ab");
            w.flush(&mut buf, 1).unwrap();
            w.finish().unwrap();
        }
        let (floor, entries, observed) = decode_sketch_snapshot(&out).unwrap();
        assert_eq!((floor, entries.len(), observed.len()), (1, 1, 0));
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
