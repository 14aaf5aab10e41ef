//! How is a document stored in a sorted set? The binary member encoding, id validation and
//! the candidates a decision compares.
//!
//! Invariants: a member is `C | fp (8 bytes BE) | seq (8 bytes BE) | id` (committed) or
//! `P | fp | nonce | id` (provisional, cluster protocol) — the same layout the Lua scripts
//! read; the fingerprint is stored exactly, never as a float score. Candidates order by
//! (distance, timestamp, sequence): nearest, then oldest, then first stored.

use crate::{Error, Result};

/// Longest accepted document id, in bytes (as the embedded engine).
pub const MAX_ID_BYTES: usize = 1024;

/// A decoded set member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) committed: bool,
    pub(crate) fp: u64,
    /// Sequence number (committed) or nonce (provisional).
    pub(crate) tag: u64,
    pub(crate) id: String,
}

impl Member {
    pub(crate) fn encode(committed: bool, fp: u64, tag: u64, id: &str) -> Vec<u8> {
        let mut m = Vec::with_capacity(17 + id.len());
        m.push(if committed { b'C' } else { b'P' });
        m.extend_from_slice(&fp.to_be_bytes());
        m.extend_from_slice(&tag.to_be_bytes());
        m.extend_from_slice(id.as_bytes());
        m
    }

    pub(crate) fn decode(m: &[u8]) -> Result<Member> {
        let bad = || Error::Corrupt(format!("set member of {} bytes", m.len()));
        if m.len() < 17 || !(m[0] == b'C' || m[0] == b'P') {
            return Err(bad());
        }
        let fp = u64::from_be_bytes(m[1..9].try_into().map_err(|_| bad())?);
        let tag = u64::from_be_bytes(m[9..17].try_into().map_err(|_| bad())?);
        let id = std::str::from_utf8(&m[17..]).map_err(|_| bad())?.to_owned();
        Ok(Member {
            committed: m[0] == b'C',
            fp,
            tag,
            id,
        })
    }
}

/// One candidate of a decision: ordering key (distance, ts, seq).
#[derive(Debug, Clone)]
pub(crate) struct Cand {
    pub(crate) d: u32,
    pub(crate) ts: i64,
    pub(crate) seq: u64,
    pub(crate) m: Member,
}

impl Cand {
    pub(crate) fn key(&self) -> (u32, i64, u64) {
        (self.d, self.ts, self.seq)
    }
}

/// Refuses an empty id and one longer than [`MAX_ID_BYTES`].
pub(crate) fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(Error::InvalidId {
            reason: "the id is empty".into(),
        });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(Error::InvalidId {
            reason: format!(
                "the id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
                id.len()
            ),
        });
    }
    Ok(())
}

/// Decodes `ZRANGEBYSCORE … WITHSCORES` pairs into members and their timestamps.
pub(crate) fn parse_pairs(v: Vec<(Vec<u8>, f64)>) -> Result<Vec<(Member, i64)>> {
    v.into_iter()
        .map(|(m, s)| Ok((Member::decode(&m)?, s as i64)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip() {
        let m = Member::encode(true, 0x0123_4567_89ab_cdef, 42, "doc/1");
        let d = Member::decode(&m).unwrap();
        assert_eq!(
            d,
            Member {
                committed: true,
                fp: 0x0123_4567_89ab_cdef,
                tag: 42,
                id: "doc/1".into()
            }
        );
        assert!(Member::decode(b"Xshort").is_err());
        assert!(Member::decode(&[b'C'; 10]).is_err());
    }
}
