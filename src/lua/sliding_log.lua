-- sliding_log.lua: docs/algorithms.md, "sliding_log" (exact log of admitted units).
--
-- State: one sorted set. Each admitted unit is a member scored by its time in microseconds
-- (>= 0). The member names come from a per-key sequence kept in the same key, as the member '#'
-- whose score is minus the last sequence number used.
--
-- Why members are unique by construction: entry members are the decimal numbers seq+1 .. seq+c,
-- where seq is read from '#' and written back as seq+c in the same script, so within the life of
-- a key every number is handed out at most once, whatever the times are (equal microseconds, or
-- time going backwards). '#' lives and dies with the key (same key, same TTL); when the key
-- expires the sequence restarts at 1, but then no entry is left to collide with. No randomness is
-- involved: Redis's Lua random generator is a fixed, server-wide sequence (docs/redis.md).
--
-- '#' never counts as an entry: it has a negative score, and entries are counted and trimmed by
-- score from 0 up, so it is also always the first member by rank (rank 0).
--
-- Entries that no longer count (t <= now - period) are only removed when an admission writes the
-- log, as the spec's state transition does: a denial or a peek writes nothing, and after a
-- backward time step such entries count again, exactly as in the C++ implementation. Reads are
-- O(log N); an admission trims in O(log N + removed). The rank of the oldest live entry, which
-- only a denial's retry_after needs, is only counted then.

local kSeqMember = '#'
-- ZADD arguments per call: Lua's unpack is limited to about 8000 values.
local kZaddChunk = 1000

-- Returns the state of the log at `key`: its sequence, and what this script has decided on it but
-- not written yet. `pending` units were admitted in this script, all at `now`; `trim_horizon` is
-- what their admissions drop when written and `max_period` the longest period among them (only
-- check_all with a repeated key decides twice on one state before writing it).
local function LoadSlidingLog(key, key_index)
  local seq = 0
  local has_seq = false
  local seq_score = redis.call('ZSCORE', key, kSeqMember)
  if seq_score then
    -- ZSCORE gives '-N'; parse the digits after the sign.
    seq = ParseInt(string.sub(seq_score, 2), 0, kMaxTimeUs)
    if string.sub(seq_score, 1, 1) ~= '-' or seq == nil then
      FailState(key_index, kSeqMember)
    end
    has_seq = true
  end
  return {key = key, key_index = key_index, seq = seq, has_seq = has_seq, pending = 0,
    trim_horizon = nil, max_period = 0}
end

-- Returns the entries that count at `now` under `period`: count, newest (nil when none), and the
-- horizon and score range ('(' .. horizon, or '0') that bound them. They are the stored entries
-- newer than the horizon that an earlier admission in this script has not dropped, plus the
-- pending ones.
local function SlidingLogLive(st, now, period)
  local horizon = now - period
  if st.trim_horizon ~= nil and st.trim_horizon > horizon then
    horizon = st.trim_horizon
  end
  local live_min = '0'
  if horizon >= 0 then
    live_min = '(' .. string.format('%d', horizon)
  end
  local stored = redis.call('ZCOUNT', st.key, live_min, '+inf')
  local newest = nil
  if stored > 0 then
    -- The highest score is live whenever any stored entry is.
    local top = redis.call('ZRANGE', st.key, -1, -1, 'WITHSCORES')
    newest = ParseInt(top[2], 0, kMaxTimeUs)
    if newest == nil then
      FailState(st.key_index, 'entry score')
    end
  end
  if st.pending > 0 and (newest == nil or newest < now) then
    newest = now
  end
  return stored + st.pending, newest, horizon, live_min
end

-- Returns the time of the k-th oldest live entry (1 <= k <= the live count).
local function SlidingLogKthOldest(st, horizon, live_min, k, now)
  local index = k
  if st.pending > 0 then
    -- Live stored entries at or before `now` come first, then the pending ones (all at `now`),
    -- then stored entries after `now` (there are some only when time went backwards).
    local before = redis.call('ZCOUNT', st.key, live_min, string.format('%d', now))
    if k > before then
      if k <= before + st.pending then
        return now
      end
      index = k - st.pending
    end
  end
  -- Ranks: '#' (if any) first, then the entries that no longer count, then the live ones.
  local rank = index - 1
  if st.has_seq then
    rank = rank + 1
  end
  if horizon >= 0 then
    rank = rank + redis.call('ZCOUNT', st.key, '0', string.format('%d', horizon))
  end
  local entry = redis.call('ZRANGE', st.key, rank, rank, 'WITHSCORES')
  local t = ParseInt(entry[2], 0, kMaxTimeUs)
  if t == nil then
    FailState(st.key_index, 'entry score')
  end
  return t
end

-- Decides `cost` at `now` against the log `st`. Returns allowed (1|0), remaining, reset_after and
-- retry_after; an admission with cost > 0 is recorded in `st` (pending), to be written by Save.
local function DecideSlidingLog(limit, period, st, now, cost)
  local count, newest, horizon, live_min = SlidingLogLive(st, now, period)
  local reset_after = 0
  if count > 0 then
    reset_after = newest + period - now
  end
  local remaining = limit - count
  if remaining < 0 then
    remaining = 0
  end
  if cost > limit then
    return 0, remaining, reset_after, -1
  end
  -- A peek is always allowed, even when a log written under a larger limit holds more.
  if cost == 0 then
    return 1, remaining, reset_after, 0
  end
  if count + cost <= limit then
    st.pending = st.pending + cost
    if st.max_period < period then
      st.max_period = period
    end
    -- The admission drops the entries that no longer count, as the spec's transition does.
    if st.trim_horizon == nil or st.trim_horizon < now - period then
      st.trim_horizon = now - period
    end
    if newest == nil or newest < now then
      newest = now
    end
    return 1, limit - count - cost, newest + period - now, 0
  end
  -- The k-th oldest entry must leave; 1 <= k <= count because cost <= limit < count + cost.
  local k = count + cost - limit
  local oldest = SlidingLogKthOldest(st, horizon, live_min, k, now)
  return 0, remaining, reset_after, oldest + period - now
end

-- Writes the pending entries (and the sequence, in the same ZADD) and the expiry.
local function SaveSlidingLog(key, st, now)
  if st.trim_horizon >= 0 then
    redis.call('ZREMRANGEBYSCORE', key, '0', string.format('%d', st.trim_horizon))
  end
  local score = string.format('%d', now)
  local args = {}
  local n = 0
  for i = 1, st.pending do
    args[n + 1] = score
    args[n + 2] = string.format('%d', st.seq + i)
    n = n + 2
    if n >= 2 * kZaddChunk then
      redis.call('ZADD', key, unpack(args, 1, n))
      n = 0
    end
  end
  args[n + 1] = string.format('%d', -(st.seq + st.pending))
  args[n + 2] = kSeqMember
  redis.call('ZADD', key, unpack(args, 1, n + 2))
  -- Expiry: the newest entry (now, or later after a backward time step) plus the period (the
  -- longest of this script's admissions, when check_all names the key with several limits).
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  SetExpiry(key, tonumber(top[2]) + st.max_period, now)
end
