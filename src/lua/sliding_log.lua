-- sliding_log.lua: docs/algorithms.md, "sliding_log" (exact log of admitted units).
--
-- State: one sorted set. Each admitted unit is a member scored by its time in microseconds
-- (>= 0) and named after the time and its place among the units recorded at that microsecond:
-- '<time>' for the first, '<time>:<i>' for the i-th (i >= 2).
--
-- Why members are unique by construction: entries are only ever removed by an admission's trim
-- (every entry at or before a time), with the whole key, or by a credit or a lease refund, which
-- remove every entry after a time and, at that time, the entries named last (the m-th, the
-- (m-1)-th, ...), so the entries at one microsecond t are always the 1st .. m-th recorded at t.
-- An admission at `now` names its units
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
-- log (`newest`: the newest stored entry left once read; `future`: how many stored entries are at
-- or after `now`, once counted), and what it has decided on it but not written yet. `pending`
-- units were admitted in this script, all at `now`; `trim_horizon` is what their admissions drop
-- when written and `max_period` the longest period among them; `removed` stored entries, the
-- newest ones, were given back by credits (only check_all with a repeated key decides twice on
-- one state before writing it).
--
-- Credits keep this lazy form: a credit gives back the newest live entries, and the newest of
-- these are always stored entries after `now` (only a lease or a backward time step makes them),
-- then the pending ones (at `now`, named after the stored ones there), then stored entries at or
-- before `now`. So the stored entries left are always all but the `removed` newest, and every
-- count of a top range of them (live, at or after `now`) is the stored count less `removed`.
local function LoadSlidingLog(key, key_index)
  return {key = key, key_index = key_index, newest = nil, future = nil, pending = 0,
    trim_horizon = nil, max_period = 0, removed = 0}
end

-- Returns the newest stored entry's time, of those credits left (REQUIRES: one is left). The
-- highest score is an entry whenever there is one: members with a negative score come first.
local function SlidingLogNewest(st)
  if st.newest == nil then
    local rank = -1 - st.removed
    local top = Call('ZRANGE', st.key, rank, rank, 'WITHSCORES')
    st.newest = ParseInt(top[2], 0, kMaxTimeUs)
    if st.newest == nil then
      FailState(st.key_index, 'entry score')
    end
  end
  return st.newest
end

-- Returns the number of stored entries (of those credits left) at or after `now`: 0 unless the
-- same microsecond comes again or time stepped back.
local function SlidingLogFuture(st, now_text)
  if st.future == nil then
    st.future = Call('ZCOUNT', st.key, now_text, '+inf')
  end
  if st.future > st.removed then
    return st.future - st.removed
  end
  return 0
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
  local stored = Call('ZCOUNT', st.key, live_min, '+inf') - st.removed
  if stored < 0 then
    stored = 0
  end
  return stored + st.pending, horizon, horizon_text
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
    if st.removed > 0 then
      -- Credits took the newest stored entries: those after `now` first, then these.
      local taken = st.removed - Call('ZCOUNT', st.key, '(' .. now_text, '+inf')
      if taken > 0 then
        before = before - taken
        if before < 0 then
          before = 0
        end
      end
    end
    if k > before then
      if k <= before + st.pending then
        return now
      end
      index = k - st.pending
    end
  end
  -- Ranks: members with a negative score (an earlier version's '#') first, then the entries that
  -- no longer count, then the live ones (credits take the newest: no rank below changes).
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

-- Gives back `units` charged earlier (docs/algorithms.md, "Credits") at `now` (and its text)
-- against the log `st`: the newest min(units, live) live entries go, newest time first, which
-- the state records (`removed`, fewer `pending`) for Save to write. Returns allowed (always 1),
-- remaining, reset_after, retry_after (0), which are a peek of the log after the credit, and
-- whether it changed.
local function CreditSlidingLog(limit, period, st, now, now_text, units)
  local given = SlidingLogLive(st, now, period)
  if units < given then
    given = units
  end
  if given > 0 then
    -- Stored entries after `now` first (a lease's, or left by a backward time step), then the
    -- pending ones at `now` (named last there), then stored ones at or before `now`.
    local after = Call('ZCOUNT', st.key, '(' .. now_text, '+inf') - st.removed
    if after < 0 then
      after = 0
    end
    if after > given then
      after = given
    end
    local pending = given - after
    if pending > st.pending then
      pending = st.pending
    end
    st.removed = st.removed + given - pending
    st.pending = st.pending - pending
    st.newest = nil
  end
  local _, remaining, reset_after = DecideSlidingLog(limit, period, st, now, now_text, 0)
  return 1, remaining, reset_after, 0, given > 0
end

-- Removes up to `count` entries at `t_text` from the log at `key`, those named last (the m-th,
-- the (m-1)-th, ...), so that the entries left there are still named 1 .. m - count. By name, not
-- by score: removing all of them and writing some back would delete a key left empty, and its
-- TTL with it. (A sorted set of more than a few hundred members is a skip list, where ZREM finds
-- a member through its hash table.) Members an earlier version named by a sequence are not found
-- by these names: fewer are removed then, never others. Returns the entries removed.
local function RemoveLastNamedSlidingLogEntries(key, t_text, count)
  local m = Call('ZCOUNT', key, t_text, t_text)
  if count > m then
    count = m
  end
  local removed = 0
  local names = {}
  for i = m, m - count + 1, -1 do
    if i == 1 then
      names[#names + 1] = t_text
    else
      names[#names + 1] = t_text .. ':' .. i
    end
    if #names >= kZaddChunk or i == m - count + 1 then
      removed = removed + Call('ZREM', key, unpack(names))
      names = {}
    end
  end
  return removed
end

-- Removes the `count` newest entries of the log at `key` (REQUIRES: 1 <= count <= its entries
-- with a score >= 0): every entry after the time t of the count-th newest, by score, then at t the
-- ones named last. One pass, whatever the times: an earlier version's names at t are not found
-- and stay (the log then keeps a few more entries than the decision counted, never fewer).
local function RemoveNewestSlidingLogEntries(key, key_index, count)
  local entry = Call('ZRANGE', key, -count, -count, 'WITHSCORES')
  local t = ParseInt(entry[2], 0, kMaxTimeUs)
  if t == nil then
    FailState(key_index, 'entry score')
  end
  local t_text = Format('%d', t)
  local removed = Call('ZREMRANGEBYSCORE', key, '(' .. t_text, '+inf')
  if removed < count then
    RemoveLastNamedSlidingLogEntries(key, t_text, count - removed)
  end
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

-- Writes what credits gave back (the `removed` newest stored entries), the pending entries
-- (trimming those that no longer count first) and the leased ones (`lease_units` at `lease_at`,
-- lease_entry.lua), then the expiry when entries were added: a log that only lost entries keeps
-- its TTL, which fewer entries never need longer.
local function SaveSlidingLog(key, st, now, now_text)
  if st.removed > 0 then
    -- First, while the stored entries are those the credits counted from the top.
    RemoveNewestSlidingLogEntries(key, st.key_index, st.removed)
    st.removed, st.newest, st.future = 0, nil, nil
  end
  if st.trim_horizon ~= nil and st.trim_horizon >= 0 then
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
  if newest ~= nil then
    SetExpiry(key, CeilDiv(newest + st.max_period, 1000), now)
  end
end
