-- sliding_log.lua: docs/algorithms.md, "sliding_log" (exact log of admitted units).
--
-- State: one sorted set. Each admitted unit is a member scored by its time in microseconds
-- (>= 0) and named after the time and its place among the units recorded at that microsecond:
-- '<time>' for the first, '<time>:<i>' for the i-th (i >= 2).
--
-- Why members are unique by construction: entries are only ever removed by an admission's trim
-- (every entry at or before a time) or with the whole key, so the entries at one microsecond t
-- are always all of those recorded at t, the 1st .. m-th. An admission at `now` names its units
-- the (m+1)-th .. (m+c)-th, where m is the number of entries at `now`: 0 when no entry is at or
-- after `now` (the usual case), else counted with ZCOUNT (the same microsecond again, or time
-- stepped back). This holds whatever the
-- times are, and involves no randomness: Redis's Lua random generator is a fixed, server-wide
-- sequence (docs/redis.md). Logs written by an earlier version also hold members named by a
-- sequence number and a member '#' with a negative score; they cannot collide with the new
-- names (a sequence number is below any time in microseconds since 2001), and '#' is never
-- counted (below).
--
-- Entries are counted and trimmed by score from 0 up, so a member with a negative score never
-- counts. Entries that no longer count (t <= now - period) are only removed when an admission
-- writes the log, as the spec's state transition does: a denial or a peek writes nothing, and
-- after a backward time step such entries count again, exactly as in the C++ implementation.
-- Reads are O(log N); an admission trims in O(log N + removed). Every command here finds members
-- by score or rank, never by name, which on a small sorted set (a listpack) would be a scan. The
-- rank of the oldest live entry, which only a denial's retry_after needs, is only counted then.

-- ZADD arguments per call: Lua's unpack is limited to about 8000 values.
local kZaddChunk = 1000

-- Returns the state of the log at `key` as this script sees it: what it has read of the stored
-- log (`newest`: the newest stored entry once read; `future`: how many stored entries are at or
-- after `now`, once counted), and what it has decided on it but not written yet. `pending` units
-- were admitted in this script, all at `now`; `trim_horizon` is what their admissions drop when
-- written and `max_period` the longest period among them (only check_all with a repeated key
-- decides twice on one state before writing it).
local function LoadSlidingLog(key, key_index)
  return {key = key, key_index = key_index, newest = nil, future = nil, pending = 0,
    trim_horizon = nil, max_period = 0}
end

-- Returns the newest stored entry's time (REQUIRES: the log has an entry). The highest score is
-- an entry whenever there is one: members with a negative score come first.
local function SlidingLogNewest(st)
  if st.newest == nil then
    local top = Call('ZRANGE', st.key, -1, -1, 'WITHSCORES')
    st.newest = ParseInt(top[2], 0, kMaxTimeUs)
    if st.newest == nil then
      FailState(st.key_index, 'entry score')
    end
  end
  return st.newest
end

-- Returns the number of stored entries at or after `now`: 0 unless the same microsecond comes
-- again or time stepped back.
local function SlidingLogFuture(st, now_text)
  if st.future == nil then
    st.future = Call('ZCOUNT', st.key, now_text, '+inf')
  end
  return st.future
end

-- Returns the entries that count at `now` under `period`: their count, and the horizon and its
-- text (entries count when newer than the horizon). They are the stored entries newer than the
-- horizon that an earlier admission in this script has not dropped, plus the pending ones.
local function SlidingLogLive(st, now, period)
  local horizon = now - period
  if st.trim_horizon ~= nil and st.trim_horizon > horizon then
    horizon = st.trim_horizon
  end
  local horizon_text = '-1'
  local live_min = '0'
  if horizon >= 0 then
    horizon_text = Format('%d', horizon)
    live_min = '(' .. horizon_text
  end
  return Call('ZCOUNT', st.key, live_min, '+inf') + st.pending, horizon, horizon_text
end

-- Returns the newest live entry's time, or nil when `live` is 0. Pending units are at `now`. A
-- stored entry is newer than `now` only after a backward time step: when none is at or after
-- `now`, the newest is `now` if a unit is pending, else read.
local function SlidingLogNewestLive(st, live, now, now_text)
  if live == 0 then
    return nil
  end
  if st.pending > 0 then
    if SlidingLogFuture(st, now_text) == 0 then
      return now
    end
    local newest = SlidingLogNewest(st)
    if newest < now then
      return now
    end
    return newest
  end
  return SlidingLogNewest(st)
end

-- Returns the time of the k-th oldest live entry (1 <= k <= the live count).
local function SlidingLogKthOldest(st, horizon, horizon_text, k, now, now_text)
  local index = k
  if st.pending > 0 then
    -- Live stored entries at or before `now` come first, then the pending ones (all at `now`),
    -- then stored entries after `now` (there are some only when time went backwards).
    local live_min = '0'
    if horizon >= 0 then
      live_min = '(' .. horizon_text
    end
    local before = Call('ZCOUNT', st.key, live_min, now_text)
    if k > before then
      if k <= before + st.pending then
        return now
      end
      index = k - st.pending
    end
  end
  -- Ranks: members with a negative score (an earlier version's '#') first, then the entries that
  -- no longer count, then the live ones.
  local not_live = '(0'
  if horizon >= 0 then
    not_live = horizon_text
  end
  local rank = index - 1 + Call('ZCOUNT', st.key, '-inf', not_live)
  local entry = Call('ZRANGE', st.key, rank, rank, 'WITHSCORES')
  local t = ParseInt(entry[2], 0, kMaxTimeUs)
  if t == nil then
    FailState(st.key_index, 'entry score')
  end
  return t
end

-- Decides `cost` at `now` (and its text) against the log `st`. Returns allowed (1|0), remaining,
-- reset_after and retry_after; an admission with cost > 0 is recorded in `st` (pending), to be
-- written by Save.
local function DecideSlidingLog(limit, period, st, now, now_text, cost)
  local count, horizon, horizon_text = SlidingLogLive(st, now, period)
  local remaining = limit - count
  if remaining < 0 then
    remaining = 0
  end
  if cost > 0 and cost <= limit and count + cost <= limit then
    st.pending = st.pending + cost
    if st.max_period < period then
      st.max_period = period
    end
    -- The admission drops the entries that no longer count, as the spec's transition does.
    if st.trim_horizon == nil or st.trim_horizon < now - period then
      st.trim_horizon = now - period
    end
    local newest = SlidingLogNewestLive(st, count + cost, now, now_text)
    return 1, limit - count - cost, newest + period - now, 0
  end
  local reset_after = 0
  local newest = SlidingLogNewestLive(st, count, now, now_text)
  if newest ~= nil then
    reset_after = newest + period - now
  end
  if cost > limit then
    return 0, remaining, reset_after, -1
  end
  -- A peek is always allowed, even when a log written under a larger limit holds more.
  if cost == 0 then
    return 1, remaining, reset_after, 0
  end
  -- The k-th oldest entry must leave; 1 <= k <= count because cost <= limit < count + cost.
  local k = count + cost - limit
  local oldest = SlidingLogKthOldest(st, horizon, horizon_text, k, now, now_text)
  return 0, remaining, reset_after, oldest + period - now
end

-- Writes `count` entries at `t` (and its text `t_text`), named after the `m` already there.
local function AddSlidingLogEntries(key, t_text, m, count)
  if m == 0 and count == 1 then
    -- The usual admission: one unit, the first at `t`.
    Call('ZADD', key, t_text, t_text)
    return
  end
  local args = {}
  local n = 0
  for i = m + 1, m + count do
    args[n + 1] = t_text
    if i == 1 then
      args[n + 2] = t_text
    else
      args[n + 2] = t_text .. ':' .. i
    end
    n = n + 2
    if n >= 2 * kZaddChunk or i == m + count then
      Call('ZADD', key, unpack(args, 1, n))
      n = 0
    end
  end
end

-- Writes the pending entries (trimming those that no longer count first) and the leased ones
-- (`lease_units` at `lease_at`, lease_entry.lua), then the expiry.
local function SaveSlidingLog(key, st, now, now_text)
  if st.trim_horizon >= 0 then
    Call('ZREMRANGEBYSCORE', key, '0', Format('%d', st.trim_horizon))
  end
  local newest = nil
  if st.pending > 0 then
    -- m: the entries already at `now`, which the new names follow.
    local m = 0
    newest = now
    if SlidingLogFuture(st, now_text) > 0 then
      m = Call('ZCOUNT', key, now_text, now_text)
      newest = SlidingLogNewest(st)
      if newest < now then
        newest = now
      end
    end
    -- AddSlidingLogEntries(key, now_text, m, st.pending), inline: this is every admission's path,
    -- where a call costs Redis about as much as a command.
    if m == 0 and st.pending == 1 then
      -- The usual admission: one unit, the first at `now`.
      Call('ZADD', key, now_text, now_text)
    else
      local args = {}
      local n = 0
      for i = m + 1, m + st.pending do
        args[n + 1] = now_text
        if i == 1 then
          args[n + 2] = now_text
        else
          args[n + 2] = now_text .. ':' .. i
        end
        n = n + 2
        if n >= 2 * kZaddChunk or i == m + st.pending then
          Call('ZADD', key, unpack(args, 1, n))
          n = 0
        end
      end
    end
  end
  if st.lease_units ~= nil then
    -- A lease's entries, at its end (after `now`): named after those already at that time.
    local at_text = Format('%d', st.lease_at)
    AddSlidingLogEntries(key, at_text, Call('ZCOUNT', key, at_text, at_text), st.lease_units)
    local top = st.lease_at
    if SlidingLogFuture(st, now_text) > 0 and SlidingLogNewest(st) > top then
      top = SlidingLogNewest(st)
    end
    if newest == nil or newest < top then
      newest = top
    end
  end
  -- Expiry: the newest entry plus the period (the longest of this script's admissions, when
  -- check_all names the key with several limits).
  SetExpiry(key, CeilDiv(newest + st.max_period, 1000), now)
end
