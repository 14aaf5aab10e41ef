//! The shared log in Redis: a Stream of the engine's records and the one script that appends
//! to it only when the appender has applied everything before.
//!
//! Keys (one hash tag, so one Redis Cluster slot): `{P}:log` the Stream (each entry one field
//! `r` holding one record), `{P}:last` the id of the last entry ever appended (kept when
//! trimming empties the Stream), `{P}:meta` the configuration every instance must share.

use std::cmp::Ordering;

use redis::{Script, Value};

use crate::conn::Conn;
use crate::{Error, Result};

/// Most entries one catch-up reply carries.
pub(super) const CATCH_UP: usize = 8192;

/// Appends ARGV[4..] (records) when `last` equals ARGV[1] (the caller's applied position);
/// otherwise returns what the caller has not applied.
///
/// KEYS: log, last. ARGV: applied id, catch-up count, trim MINID ('' for none), records...
/// Returns `{1, last}` (appended; `last` is the id of the caller's last record, or the
/// unchanged position when it appended nothing) or `{0, last, entries}` (behind: the entries
/// after the caller's position, at most the catch-up count, as XRANGE gives them).
const APPEND: &str = r#"
local last = redis.call('GET', KEYS[2]) or '0-0'
if last ~= ARGV[1] then
  return {0, last, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])}
end
if #ARGV < 4 then return {1, last} end
for i = 4, #ARGV do
  last = redis.call('XADD', KEYS[1], '*', 'r', ARGV[i])
end
redis.call('SET', KEYS[2], last)
if ARGV[3] ~= '' then redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[3]) end
return {1, last}
"#;

/// A Stream entry id (`ms-seq`), ordered as Redis orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(super) struct EntryId(u64, u64);

impl EntryId {
    pub(super) fn parse(s: &[u8]) -> Result<EntryId> {
        let bad = || Error::Corrupt(format!("not a stream id: {:?}", String::from_utf8_lossy(s)));
        let s = std::str::from_utf8(s).map_err(|_| bad())?;
        let (a, b) = s.split_once('-').ok_or_else(bad)?;
        Ok(EntryId(
            a.parse().map_err(|_| bad())?,
            b.parse().map_err(|_| bad())?,
        ))
    }
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// What an append attempt found.
#[derive(Debug)]
pub(super) enum Appended {
    /// Appended (or, with no records, confirmed current): the new position.
    Done(EntryId),
    /// Someone appended first: the log's last id and the entries after the caller's position.
    Behind {
        last: EntryId,
        entries: Vec<(EntryId, Vec<u8>)>,
    },
}

/// The log of one index prefix.
pub(super) struct Log {
    conn: Conn,
    append: Script,
    keys: [String; 2],
    pub(super) meta_key: String,
}

impl Log {
    pub(super) fn new(conn: Conn, prefix: &str) -> Log {
        Log {
            conn,
            append: Script::new(APPEND),
            keys: [format!("{{{prefix}}}:log"), format!("{{{prefix}}}:last")],
            meta_key: format!("{{{prefix}}}:meta"),
        }
    }

    pub(super) fn conn(&self) -> Conn {
        self.conn.clone()
    }

    /// Appends `records` if the log ends at `at`; trims entries older than `trim` (a Stream
    /// id's milliseconds) when it appends.
    pub(super) async fn append(
        &self,
        at: EntryId,
        records: &[Vec<u8>],
        trim: Option<i64>,
    ) -> Result<Appended> {
        let mut inv = self.append.prepare_invoke();
        inv.key(&self.keys[0])
            .key(&self.keys[1])
            .arg(at.to_string())
            .arg(CATCH_UP)
            .arg(trim.map_or(String::new(), |t| format!("{}-0", t.max(0))));
        for r in records {
            inv.arg(r.as_slice());
        }
        let v: Value = inv.invoke_async(&mut self.conn()).await?;
        parse_reply(v)
    }

    /// The log's size in Redis (`MEMORY USAGE` of the Stream, bytes) and its length.
    pub(super) async fn size(&self) -> Result<(u64, u64)> {
        let mut c = self.conn();
        let bytes: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&self.keys[0])
            .arg("SAMPLES")
            .arg(0)
            .query_async(&mut c)
            .await?;
        let len: u64 = redis::cmd("XLEN")
            .arg(&self.keys[0])
            .query_async(&mut c)
            .await?;
        Ok((bytes.unwrap_or(0), len))
    }
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("unexpected reply of the log script: {what}"))
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn parse_reply(v: Value) -> Result<Appended> {
    let Value::Array(mut parts) = v else {
        return Err(corrupt("not an array"));
    };
    let flag = match parts.first() {
        Some(Value::Int(i)) => *i,
        _ => return Err(corrupt("no flag")),
    };
    let last = EntryId::parse(
        parts
            .get(1)
            .and_then(bytes)
            .ok_or_else(|| corrupt("no id"))?,
    )?;
    if flag == 1 {
        return Ok(Appended::Done(last));
    }
    let Some(Value::Array(list)) = parts.pop() else {
        return Err(corrupt("no entries"));
    };
    let mut entries = Vec::with_capacity(list.len());
    for e in list {
        let Value::Array(mut e) = e else {
            return Err(corrupt("entry is not an array"));
        };
        let fields = match e.pop() {
            Some(Value::Array(f)) => f,
            _ => return Err(corrupt("entry without fields")),
        };
        let id = EntryId::parse(
            e.first()
                .and_then(bytes)
                .ok_or_else(|| corrupt("entry id"))?,
        )?;
        let mut fields = fields.into_iter();
        match (fields.next(), fields.next()) {
            (Some(k), Some(Value::BulkString(r))) if bytes(&k) == Some(b"r") => {
                entries.push((id, r));
            }
            _ => return Err(corrupt("entry field is not `r`")),
        }
    }
    Ok(Appended::Behind { last, entries })
}

/// Whether the log went backwards: its last id is below what this instance applied (Redis
/// lost acknowledged entries: a restart without `appendfsync always`, or a failover to a
/// replica that had not received them).
pub(super) fn went_back(last: EntryId, applied: EntryId) -> bool {
    last.cmp(&applied) == Ordering::Less
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_order_as_redis_orders_them() {
        let a = EntryId::parse(b"1700000000000-0").unwrap();
        let b = EntryId::parse(b"1700000000000-12").unwrap();
        let c = EntryId::parse(b"1700000000001-0").unwrap();
        assert!(a < b && b < c);
        assert_eq!(b.to_string(), "1700000000000-12");
        assert!(went_back(a, b) && !went_back(c, b) && !went_back(b, b));
        assert!(EntryId::parse(b"12").is_err());
        assert!(EntryId::parse(b"x-1").is_err());
    }
}
