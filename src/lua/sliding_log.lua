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
-- O(log N); an admission trims in O(log N + removed).

local kSeqMember = '#'
-- ZADD arguments per call: Lua's unpack is limited to about 8000 values.
local kZaddChunk = 1000

local SlidingLog = {}

function SlidingLog.Load(key, key_index)
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
  -- `pending` units were decided in this script but are not written yet, all at `now`, and
  -- `trim_horizon` is what their admissions drop when written (only check_all with a repeated key
  -- decides twice on one state before writing it).
  return {key = key, key_index = key_index, seq = seq, has_seq = has_seq, pending = 0,
    trim_horizon = nil}
end

-- Returns the entries that count at `now` under `period`: {count, newest, live_min (the score
-- range's lower end), first_live_rank (the rank of the oldest of them)}. They are the stored
-- entries newer than the horizon that an earlier admission in this script has not dropped, plus
-- the pending ones.
local function LiveEntries(st, now, period)
  local horizon = now - period
  if st.trim_horizon ~= nil and st.trim_horizon > horizon then
    horizon = st.trim_horizon
  end
  local live_min = '0'
  local first_live_rank = 0
  if st.has_seq then
    first_live_rank = 1
  end
  if horizon >= 0 then
    live_min = '(' .. Int(horizon)
    first_live_rank = first_live_rank + redis.call('ZCOUNT', st.key, '0', Int(horizon))
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
  return {count = stored + st.pending, newest = newest, live_min = live_min,
    first_live_rank = first_live_rank}
end

-- Returns the time of the k-th oldest live entry (1 <= k <= live.count).
local function KthOldest(st, live, k, now)
  local index = k
  if st.pending > 0 then
    -- Live stored entries at or before `now` come first, then the pending ones (all at `now`),
    -- then stored entries after `now` (there are some only when time went backwards).
    local before = redis.call('ZCOUNT', st.key, live.live_min, Int(now))
    if k > before then
      if k <= before + st.pending then
        return now
      end
      index = k - st.pending
    end
  end
  local rank = live.first_live_rank + index - 1
  local entry = redis.call('ZRANGE', st.key, rank, rank, 'WITHSCORES')
  local t = ParseInt(entry[2], 0, kMaxTimeUs)
  if t == nil then
    FailState(st.key_index, 'entry score')
  end
  return t
end

function SlidingLog.Decide(lim, st, now, cost)
  local limit, period = lim.limit, lim.period
  local live = LiveEntries(st, now, period)
  local count = live.count
  local reset_after = 0
  if count > 0 then
    reset_after = live.newest + period - now
  end
  if cost > limit then
    return {0, limit, Max0(limit - count), reset_after, -1}
  end
  -- A peek is always allowed, even when a log written under a larger limit holds more.
  if cost == 0 or count + cost <= limit then
    if cost > 0 then
      st.pending = st.pending + cost
      st.lim = lim
      st.dirty = true
      if st.max_period == nil or st.max_period < period then
        st.max_period = period
      end
      -- The admission drops the entries that no longer count, as the spec's transition does.
      if st.trim_horizon == nil or st.trim_horizon < now - period then
        st.trim_horizon = now - period
      end
      local newest = live.newest
      if newest == nil or newest < now then
        newest = now
      end
      reset_after = newest + period - now
    end
    return {1, limit, Max0(limit - count - cost), reset_after, 0}
  end
  -- The k-th oldest entry must leave; 1 <= k <= count because cost <= limit < count + cost.
  local k = count + cost - limit
  return {0, limit, Max0(limit - count), reset_after, KthOldest(st, live, k, now) + period - now}
end

function SlidingLog.Save(key, st, now)
  if st.trim_horizon >= 0 then
    redis.call('ZREMRANGEBYSCORE', key, '0', Int(st.trim_horizon))
  end
  local score = Int(now)
  local args = {}
  for i = 1, st.pending do
    args[#args + 1] = score
    args[#args + 1] = Int(st.seq + i)
    if #args >= 2 * kZaddChunk then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  if #args > 0 then
    redis.call('ZADD', key, unpack(args))
  end
  redis.call('ZADD', key, Int(-(st.seq + st.pending)), kSeqMember)
  -- Expiry: the newest entry (now, or later after a backward time step) plus the period (the
  -- longest of this script's admissions, when check_all names the key with several limits).
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  SetExpiry(key, tonumber(top[2]) + st.max_period, now)
end
