-- lease_entry.lua: the leasing functions (docs/algorithms.md, "Leases"; docs/redis.md,
-- "Leases"). They hold every algorithm's piece and check_all_entry's LoadAny, DecideAny and
-- SaveAny.
--
-- lease_all: the checks of check_all, each with a want; when every check passes, each is granted
-- up to its want from its own state (g = min(want, remaining div 2)).
--   keys[1 .. n]               distinct state keys, 1 <= n <= kMaxChecks
--   args[kArgvBase + i]        check i (parse_check.lua)
--   args[kArgvBase + n + i]    want i: kWantBytes, kWantFormat, little-endian:
--                                units    u64  [0, 2^32]; 0 asks for none
--                                ttl_us   u64  [1 ms, 366 days]; the algorithm clamps it to
--                                              [1 ms, period]; the windows ignore it
-- Returns all_allowed (1|0), now_us, then per check: allowed, limit, remaining, reset_after_us,
-- retry_after_us, granted, ends_us: 2 + 7 * n little-endian 64-bit integers. As check_all: when
-- a check is denied nothing is written or granted, each denied check reports its decision and each
-- other a peek of the stored state. After a grant, a check's remaining and reset_after are those of
-- the state after the grant.
--
-- lease_refund: gives back unspent units of leases, in order.
--   keys[1 .. n]               state keys, 1 <= n <= kMaxChecks (a key may repeat)
--   args[kArgvBase + i]        the check the lease was granted on (parse_check.lua; its cost is
--                              validated, then ignored)
--   args[kArgvBase + n + i]    refund i: kRefundBytes, kRefundFormat, little-endian:
--                                ends_us  u64  the lease's end, [0, 2^53)
--                                granted  u64  its units as the store records them, [1, 2^32]
--                                unspent  u64  units given back, [1, granted]
-- Returns now_us, then the units each refund gave back: 1 + n little-endian 64-bit integers.
--
-- lease_holders: records this instance as a leaseholder and counts the instances recorded, so
-- that a failure policy can cut each limit to one instance's share during an outage (docs/redis.md,
-- "Leases", "Outage").
--   keys[1]                    the holders key: a sorted set of instance ids scored by the
--                              microsecond their record ends
--   args[kArgvBase + 1]        this instance's id, 1 to kMaxHolderIdBytes bytes
--   args[kArgvBase + 2]        how long its record lasts, microseconds, [1 ms, 1 hour], decimal
-- Drops the records that ended, records (or renews) this instance's unless kMaxHolders others are
-- recorded, and returns the number of records (an integer reply).
--
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written.

local kWantFormat = '<I8I8'
local kWantBytes = 16
local kRefundFormat = '<I8I8I8'
local kRefundBytes = 24
local kMinLeaseTtlUs = 1000
local kMaxHolderIdBytes = 64
local kMaxHolderTtlUs = 3600000000
-- Bounds the holders key whatever ids are sent: past it, new ids are counted as none (the count
-- is then already far above any real deployment's, so shares are only smaller).
local kMaxHolders = 10000

-- Returns how many entries of `record` have not ended at `now`.
local function RunningLeases(record, now)
  local n = 0
  if record ~= nil then
    for i = 1, #record, 2 do
      if record[i] > now then
        n = n + 1
      end
    end
  end
  return n
end

-- Returns a new record: `record` with (ends, units) after every entry ending at or before `ends`.
local function InsertLease(record, ends, units)
  local out = {}
  local placed = false
  if record ~= nil then
    for i = 1, #record, 2 do
      if not placed and record[i] > ends then
        out[#out + 1] = ends
        out[#out + 1] = units
        placed = true
      end
      out[#out + 1] = record[i]
      out[#out + 1] = record[i + 1]
    end
  end
  if not placed then
    out[#out + 1] = ends
    out[#out + 1] = units
  end
  return out
end

-- Returns the index in `record` of the entry (ends, granted), or nil.
local function FindLease(record, ends, granted)
  if record ~= nil then
    for i = 1, #record, 2 do
      if record[i] == ends and record[i + 1] == granted then
        return i
      end
    end
  end
  return nil
end

-- Returns a new record: `record` with `units` fewer in the entry at index `at` (dropped at 0),
-- pruned at `now` (nil when empty).
local function KeepLeaseRest(record, at, units, now)
  local out = {}
  for i = 1, #record, 2 do
    local left = record[i + 1]
    if i == at then
      left = left - units
    end
    if left > 0 then
      out[#out + 1] = record[i]
      out[#out + 1] = left
    end
  end
  return LeaseRecord().Prune(out, now)
end

-- Returns the units and ttl of want `index` (from 1).
local function ParseWant(want, index)
  if #want ~= kWantBytes then
    Fail('want ' .. index .. ': expected ' .. kWantBytes .. ' bytes, got ' .. #want)
  end
  local units, ttl = Unpack(kWantFormat, want)
  if units > kMaxCost then
    Fail('want ' .. index .. ': units must be an integer in [0, 2^32]')
  end
  if ttl < kMinLeaseTtlUs or ttl > kMaxPeriodUs then
    Fail('want ' .. index .. ': ttl_us must be in [1 ms, 366 days]')
  end
  return units, ttl
end

-- Returns the ends_us, granted and unspent of refund `index` (from 1).
local function ParseRefund(refund, index)
  if #refund ~= kRefundBytes then
    Fail('refund ' .. index .. ': expected ' .. kRefundBytes .. ' bytes, got ' .. #refund)
  end
  local ends, granted, unspent = Unpack(kRefundFormat, refund)
  if ends > kMaxTimeUs then
    Fail('refund ' .. index .. ': ends_us must be below 2^53')
  end
  if granted < 1 or granted > kMaxCost then
    Fail('refund ' .. index .. ': granted must be an integer in [1, 2^32]')
  end
  if unspent < 1 or unspent > granted then
    Fail('refund ' .. index .. ': unspent must be an integer in [1, granted]')
  end
  return ends, granted, unspent
end

-- Grants up to `want` units to check `c`, whose request was admitted on `st` at `now` with
-- `remaining` and `reset_after`. Returns granted, ends_us and the remaining and reset_after of the
-- state after the grant (unchanged when nothing is granted).
local function GrantAny(c, st, now, now_text, remaining, reset_after, want, ttl)
  local g = Floor(remaining / 2) -- remaining <= 2^32: exact
  if want < g then
    g = want
  end
  if g == 0 then
    return 0, 0, remaining, reset_after
  end
  local algorithm, period = c[1], c[3]
  if ttl > period then
    ttl = period
  end
  if algorithm == kFixedWindow or algorithm == kSlidingWindow then
    -- g more units in the window (which passes: g <= remaining); the lease ends with it.
    local _
    _, remaining, reset_after = DecideAny(c, st, now, now_text, g)
    return g, st.a + period, remaining, reset_after
  end
  local ends = now + ttl
  if algorithm == kSlidingLog then
    -- g entries at the lease's end (SaveSlidingLog writes them); the grant is a write, so it also
    -- trims, as an admission does.
    local log = st.log
    log.lease_at, log.lease_units = ends, g
    if log.trim_horizon == nil or log.trim_horizon < now - period then
      log.trim_horizon = now - period
    end
    if log.max_period < period then
      log.max_period = period
    end
    st.dirty, st.algorithm = true, kSlidingLog
    local r = ends + period - now
    if r < reset_after then
      r = reset_after
    end
    return g, ends, remaining - g, r
  end
  -- Token bucket, GCRA: g tokens taken now (which passes), the lease noted in the record, unless
  -- it already holds kMaxLeaseEntries running leases.
  if RunningLeases(st.l, now) >= kMaxLeaseEntries then
    return 0, 0, remaining, reset_after
  end
  DecideAny(c, st, now, now_text, g)
  st.l = InsertLease(st.l, ends, g)
  local _
  _, remaining, reset_after = DecideAny(c, st, now, now_text, 0)
  return g, ends, remaining, reset_after
end

local function LeaseAll(keys, args)
  if not Call then
    Init()
  end
  local n = #keys
  if n < 1 or n > kMaxChecks or #args ~= kArgvBase + 2 * n then
    Fail('expected 1 to ' .. kMaxChecks .. ' keys, and one check and one want per key')
  end
  -- Every argument is parsed before anything is read.
  local checks, wants = {}, {}
  local seen = {}
  for i = 1, n do
    local algorithm, limit, period, capacity, cost, counting, refund =
      ParseCheck(args[kArgvBase + i], i)
    if counting then
      -- A lease spends units that were admitted; a check recording denied hits takes none.
      Fail('check ' .. i .. ': a check counting rejected hits takes no lease')
    end
    if refund then
      -- A credit gives units back; it has nothing to lease (check_all decides it).
      Fail('check ' .. i .. ': a credit takes no lease')
    end
    if seen[keys[i]] then
      Fail('check ' .. i .. ': key repeated (the keys of a leasing call must be distinct)')
    end
    seen[keys[i]] = true
    checks[i] = {algorithm, limit, period, capacity, cost}
    local units, ttl = ParseWant(args[kArgvBase + n + i], i)
    wants[i] = {units, ttl}
  end
  local now = NowMicros(args)
  local now_text = Format('%d', now)

  -- reply[1] is all_allowed, reply[2] now; check i's fields are at 7 * (i - 1) + 3 .. + 9.
  local reply = {1, now}
  local states = {}
  for i = 1, n do
    local c = checks[i]
    local st = LoadAny(c[1], keys[i], i)
    states[i] = st
    local r = 7 * (i - 1) + 2
    reply[r + 1], reply[r + 3], reply[r + 4], reply[r + 5] = DecideAny(c, st, now, now_text, c[5])
    reply[r + 2], reply[r + 6], reply[r + 7] = c[4], 0, 0
    if reply[r + 1] ~= 1 then
      reply[1] = 0
    end
  end

  if reply[1] == 1 then
    for i = 1, n do
      local r = 7 * (i - 1) + 2
      local st = states[i]
      if wants[i][1] > 0 then
        reply[r + 6], reply[r + 7], reply[r + 3], reply[r + 4] = GrantAny(checks[i], st, now,
          now_text, reply[r + 3], reply[r + 4], wants[i][1], wants[i][2])
      end
      if st.dirty then
        SaveAny(keys[i], st, now, now_text)
      end
    end
  else
    -- Nothing is written: the checks that passed report a peek of the stored state.
    for i = 1, n do
      local r = 7 * (i - 1) + 2
      if reply[r + 1] == 1 then
        local c = checks[i]
        reply[r + 1], reply[r + 3], reply[r + 4], reply[r + 5] =
          DecideAny(c, LoadAny(c[1], keys[i], i), now, now_text, 0)
      end
    end
  end
  return Pack('<' .. string.rep('i8', 2 + 7 * n), unpack(reply, 1, 2 + 7 * n))
end

-- Refunds of the window algorithms: the count of the lease's window goes down (never below 0), the
-- key keeps its TTL and the expiry its state records. Returns the units given back.
local function RefundWindow(c, key, i, ends, unspent)
  local algorithm, period = c[1], c[3]
  if algorithm == kFixedWindow then
    local window_start, count, expiry_ms = LoadFixedWindow(key, i)
    -- expiry_ms is -1 for no state, or a decimal one that no lease was granted on.
    if expiry_ms < 0 or window_start ~= ends - period or count == 0 then
      return 0
    end
    if unspent > count then
      unspent = count
    end
    Call('SET', key, Pack(kFixedWindowState, window_start, count - unspent, expiry_ms), 'KEEPTTL')
    return unspent
  end
  local window_start, current, previous, expiry_ms = LoadSlidingWindow(key, i)
  if expiry_ms < 0 or window_start ~= ends - period or current == 0 then
    return 0
  end
  if unspent > current then
    unspent = current
  end
  Call('SET', key,
    Pack(kSlidingWindowState, window_start, current - unspent, previous, expiry_ms), 'KEEPTTL')
  return unspent
end

-- The sliding log's refund: up to `unspent` entries at `ends` go, those named last (the m-th, the
-- (m-1)-th, ...), so that the entries left there are still named 1 .. m' (sliding_log.lua). The
-- key keeps its TTL: fewer entries never need a longer one. Returns the entries removed.
local function RefundSlidingLog(key, ends, unspent)
  return RemoveLastNamedSlidingLogEntries(key, Format('%d', ends), unspent)
end

-- The token bucket's and GCRA's refund: the entry (ends, granted) must be in the record; u units
-- come off it and go back to the bucket, taken from the state a check would decide on now.
local function RefundBucket(c, key, i, ends, granted, unspent, now)
  local algorithm, rate, period, burst = c[1], c[2], c[3], c[4]
  local a, b, leases
  if algorithm == kTokenBucket then
    a, b, leases = LoadTokenBucket(key, i)
  else
    a, b, leases = LoadGcra(key, i)
  end
  local at = FindLease(leases, ends, granted)
  if at == nil then
    return 0
  end
  local u = unspent
  if burst < u then
    u = burst
  end
  if algorithm == kTokenBucket then
    -- The deficit refilled to t, then every floor (this lease's included), less u tokens.
    local t, d = FlooredTokenBucket(rate, burst, period, a, b, now, leases)
    d = d - u * period
    if d < 0 then
      d = 0
    end
    SaveTokenBucket(key, d, t, rate, now, KeepLeaseRest(leases, at, u, now), burst, period)
    return u
  end
  -- GCRA: the TAT after now with every floor, less u * T as pairs, never before now.
  local dt, frac = FlooredGcra(rate, burst, period, a, b, now, leases)
  local increment = u * period
  local q = IDiv(increment, rate)
  dt, frac = dt - q, frac - (increment - q * rate)
  if frac < 0 then
    frac = frac + rate
    dt = dt - 1
  end
  if dt < 0 then
    dt, frac = 0, 0
  end
  SaveGcra(key, now + dt, frac, now, KeepLeaseRest(leases, at, u, now), rate, burst, period)
  return u
end

local function LeaseRefund(keys, args)
  if not Call then
    Init()
  end
  local n = #keys
  if n < 1 or n > kMaxChecks or #args ~= kArgvBase + 2 * n then
    Fail('expected 1 to ' .. kMaxChecks .. ' keys, and one check and one refund per key')
  end
  local checks, refunds = {}, {}
  local algorithm_of_key = {}
  for i = 1, n do
    local algorithm, limit, period, capacity, _, counting, refund =
      ParseCheck(args[kArgvBase + i], i)
    if counting then
      Fail('check ' .. i .. ': a check counting rejected hits takes no lease')
    end
    if refund then
      Fail('check ' .. i .. ': a credit takes no lease')
    end
    local seen = algorithm_of_key[keys[i]]
    if seen ~= nil and seen ~= algorithm then
      Fail('check ' .. i .. ': key repeated with a different algorithm')
    end
    algorithm_of_key[keys[i]] = algorithm
    checks[i] = {algorithm, limit, period, capacity}
    local ends, granted, unspent = ParseRefund(args[kArgvBase + n + i], i)
    refunds[i] = {ends, granted, unspent}
  end
  local now = NowMicros(args)

  local reply = {now}
  for i = 1, n do
    local c, rf = checks[i], refunds[i]
    local given = 0
    -- A lease that has ended has nothing to give back.
    if now < rf[1] then
      if c[1] == kFixedWindow or c[1] == kSlidingWindow then
        given = RefundWindow(c, keys[i], i, rf[1], rf[3])
      elseif c[1] == kSlidingLog then
        given = RefundSlidingLog(keys[i], rf[1], rf[3])
      else
        given = RefundBucket(c, keys[i], i, rf[1], rf[2], rf[3], now)
      end
    end
    reply[i + 1] = given
  end
  return Pack('<' .. string.rep('i8', 1 + n), unpack(reply, 1, 1 + n))
end

local function LeaseHolders(keys, args)
  if not Call then
    Init()
  end
  if #keys ~= 1 or #args ~= kArgvBase + 2 then
    Fail('expected one key (the holders key), an instance id and a ttl')
  end
  local id = args[kArgvBase + 1]
  if #id < 1 or #id > kMaxHolderIdBytes then
    Fail('instance id: 1 to ' .. kMaxHolderIdBytes .. ' bytes')
  end
  local ttl = ParseInt(args[kArgvBase + 2], kMinLeaseTtlUs, kMaxHolderTtlUs)
  if ttl == nil then
    Fail('ttl_us: must be an integer in [' .. kMinLeaseTtlUs .. ', ' .. kMaxHolderTtlUs .. ']')
  end
  local now = NowMicros(args)
  local key = keys[1]
  Call('ZREMRANGEBYSCORE', key, '-inf', Format('%d', now))
  local count = Call('ZCARD', key)
  if count < kMaxHolders or Call('ZSCORE', key, id) then
    Call('ZADD', key, Format('%d', now + ttl), id)
  end
  -- The key lasts as long as its latest record (records may differ in ttl).
  local last = Call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local ends = ToNumber(last[2])
  SetExpiry(key, CeilDiv(ends, 1000), now)
  return Call('ZCARD', key)
end
