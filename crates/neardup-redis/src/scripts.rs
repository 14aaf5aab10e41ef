//! The Lua scripts (run with EVALSHA; reloaded automatically after a Redis restart).
//!
//! Members of every set are binary: `C | fp (8 bytes BE) | seq (8 bytes BE) | id` for a
//! committed document, `P | fp (8 bytes BE) | nonce (8 bytes BE) | id` for a provisional entry
//! of the cluster protocol. Scores are the documents' timestamps in milliseconds (exact: below
//! 2^53), never fingerprints.

use redis::Script;

/// Helpers shared by the scripts: Hamming distance of a member to the query halves (with an
/// early exit once past `k`) and the sequence number of a committed member.
const PRELUDE: &str = r#"
local function ham(m, qhi, qlo, k)
  local hi, lo = struct.unpack('>I4I4', m, 2)
  local c = 0
  local x = bit.bxor(hi, qhi)
  while x ~= 0 do
    x = bit.band(x, x - 1)
    c = c + 1
    if c > k then return c end
  end
  x = bit.bxor(lo, qlo)
  while x ~= 0 do
    x = bit.band(x, x - 1)
    c = c + 1
    if c > k then return c end
  end
  return c
end
local function seq_of(m)
  local a, b = struct.unpack('>I4I4', m, 10)
  return a * 4294967296 + b
end
"#;

/// Single Redis: the whole check-and-insert, atomically, in one round trip.
///
/// KEYS: table keys 1..T, id key, sequence key, stats key.
/// ARGV: fp (8 bytes), fp high half, fp low half, id, ts, expired_at, k, ttl ms, count field,
/// live ('1' when ts > expired_at).
/// Returns `{1, member, distance, ts}` for a duplicate, `{0, 1, seq}` when stored,
/// `{0, 0}` when unique but outside the window (not stored).
const CHECK: &str = r#"
local T = #KEYS - 3
local qhi, qlo, k = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[7])
local lo = '(' .. ARGV[6]
local best_d, best_ts, best_seq, best_m
local function consider(m, ts, d)
  local s = seq_of(m)
  if not best_m or d < best_d or (d == best_d and (ts < best_ts or (ts == best_ts and s < best_seq))) then
    best_d, best_ts, best_seq, best_m = d, ts, s, m
  end
end
local r = redis.call('ZRANGEBYSCORE', KEYS[T + 1], lo, '+inf', 'WITHSCORES')
for i = 1, #r, 2 do
  local m = r[i]
  if string.byte(m, 1) == 67 and string.sub(m, 18) == ARGV[4] then
    consider(m, tonumber(r[i + 1]), ham(m, qhi, qlo, 64))
  end
end
if not best_m then
  for t = 1, T do
    r = redis.call('ZRANGEBYSCORE', KEYS[t], lo, '+inf', 'WITHSCORES')
    for i = 1, #r, 2 do
      local m = r[i]
      if string.byte(m, 1) == 67 then
        local d = ham(m, qhi, qlo, k)
        if d <= k then consider(m, tonumber(r[i + 1]), d) end
      end
    end
  end
end
if best_m then
  redis.call('HINCRBY', KEYS[T + 3], 'duplicates', 1)
  return {1, best_m, best_d, best_ts}
end
if ARGV[10] ~= '1' then return {0, 0} end
local seq = redis.call('INCR', KEYS[T + 2])
local m = 'C' .. ARGV[1] .. struct.pack('>I4I4', math.floor(seq / 4294967296), seq % 4294967296) .. ARGV[4]
local ttl = tonumber(ARGV[8])
for t = 1, T + 1 do
  local key = KEYS[t]
  redis.call('ZADD', key, ARGV[5], m)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[6])
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
redis.call('HINCRBY', KEYS[T + 3], 'inserted', 1)
redis.call('HINCRBY', KEYS[T + 3], ARGV[9], 1)
return {0, 1, seq}
"#;

/// Cluster phase 1 (one key): add a member, trim expired members, extend the key's TTL.
/// KEYS: the key. ARGV: member, ts, expired_at, ttl ms.
const ADD: &str = r#"
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 1
"#;

/// Cluster phase 2: take the next sequence number and record it, atomically, in the status
/// key of this attempt (same hash slot). KEYS: sequence key, status key. ARGV: lease ms.
const SEQ: &str = r#"
local x = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2], string.format('%d:P', x), 'PX', ARGV[1])
return x
"#;

/// Cluster decision: pending → final state, only if still pending (a lapsed lease makes the
/// key vanish, and then nothing can commit). KEYS: status key. ARGV: state letter, grace ms.
/// Returns the new value, the existing final value, or nil when the key is gone.
const FINISH: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return false end
if string.sub(v, -1) ~= 'P' then return v end
local nv = string.sub(v, 1, -2) .. ARGV[1]
redis.call('SET', KEYS[1], nv, 'PX', ARGV[2])
return nv
"#;

/// Cluster: a live attempt that is waiting extends its own lease (only while still pending
/// with its own sequence number). KEYS: status key. ARGV: expected value, lease ms.
const EXTEND: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"#;

/// Cluster commit of one key: replace the provisional member by the committed one (same
/// score); idempotent, so anyone may help. KEYS: key. ARGV: P member, C member, ts.
const COMMIT: &str = r#"
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  return 1
end
return 0
"#;

/// The loaded scripts.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub check: Script,
    pub add: Script,
    pub seq: Script,
    pub finish: Script,
    pub extend: Script,
    pub commit: Script,
}

impl Scripts {
    pub fn new() -> Scripts {
        Scripts {
            check: Script::new(&format!("{PRELUDE}{CHECK}")),
            add: Script::new(ADD),
            seq: Script::new(SEQ),
            finish: Script::new(FINISH),
            extend: Script::new(EXTEND),
            commit: Script::new(COMMIT),
        }
    }
}
