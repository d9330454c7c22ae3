-- check_all_entry.lua: the multi-limit (all-or-nothing) function, which holds every algorithm's
-- piece and picks one per check.
--
-- keys[1 .. n]                 one state key per check, 1 <= n <= kMaxChecks
-- args[kArgvBase + i]          check i (parse_check.lua)
-- Returns all_allowed (1|0), then each check's decision, packed in kDecisionFormat: 1 + 5 * n
-- little-endian 64-bit integers.
--
-- Checks are decided in order against a tentative state per distinct key, so a key named twice
-- behaves as two checks applied one after the other. Only when every check is admitted is any
-- state written (all of them), or when the one check counts rejected hits; otherwise nothing is
-- written, each denied check reports its
-- decision, and each check that would have passed reports a peek (cost 0) of the stored state, as
-- Store::CheckAll() specifies.
--
-- A check may be a credit (kRefund; docs/algorithms.md, "Credits"), which only this function
-- decides: it gives its cost back to the tentative state, is always allowed (so it never denies
-- the call) and marks the state to write only when it gave something back. Like any check, it is
-- written only when every check of the call passes.

-- A key's state: {a, b, c} (the fields of its string state, `e` the expiry its key was written
-- with, `l` the lease record of a token bucket or GCRA state; the sliding log keeps its own table
-- in `log`).
local function LoadAny(algorithm, key, i)
  local st = {}
  if algorithm == kFixedWindow then
    st.a, st.b, st.e = LoadFixedWindow(key, i)
  elseif algorithm == kSlidingWindow then
    st.a, st.b, st.c, st.e = LoadSlidingWindow(key, i)
  elseif algorithm == kTokenBucket then
    st.a, st.b, st.l = LoadTokenBucket(key, i)
  elseif algorithm == kGcra then
    st.a, st.b, st.l = LoadGcra(key, i)
  else
    st.log = LoadSlidingLog(key, i)
  end
  return st
end

-- Decides check `c` (its parsed fields, with `cost`) against `st` at `now` (`now_text` is its
-- decimal text); an admission with
-- cost > 0 updates `st`, and marks it dirty with what its expiry needs from the last check that
-- changed it (`period`, `rate`, `burst`). A credit (c[7]) gives `cost` back instead, and marks `st`
-- dirty only when that changed it. Returns allowed, remaining, reset_after, retry_after.
local function DecideAny(c, st, now, now_text, cost)
  local algorithm, limit, period, capacity, counting = c[1], c[2], c[3], c[4], c[6]
  local allowed, remaining, reset_after, retry_after
  if c[7] then
    local changed
    if algorithm == kFixedWindow then
      allowed, remaining, reset_after, retry_after, st.a, st.b, changed =
        CreditFixedWindow(limit, period, st.a, st.b, now, cost)
    elseif algorithm == kSlidingWindow then
      allowed, remaining, reset_after, retry_after, st.a, st.b, st.c, changed =
        CreditSlidingWindow(limit, period, st.a, st.b, st.c, now, cost)
    elseif algorithm == kTokenBucket then
      allowed, remaining, reset_after, retry_after, st.a, st.b, st.l, changed =
        CreditTokenBucket(limit, capacity, period, st.a, st.b, now, cost, st.l)
    elseif algorithm == kGcra then
      allowed, remaining, reset_after, retry_after, st.a, st.b, st.l, changed =
        CreditGcra(limit, capacity, period, st.a, st.b, now, cost, st.l)
    else
      allowed, remaining, reset_after, retry_after, changed =
        CreditSlidingLog(limit, period, st.log, now, now_text, cost)
    end
    if changed then
      st.dirty, st.algorithm, st.period = true, algorithm, period
      st.rate, st.burst = limit, capacity
    end
    return allowed, remaining, reset_after, retry_after
  end
  if algorithm == kFixedWindow then
    allowed, remaining, reset_after, retry_after, st.a, st.b =
      DecideFixedWindow(limit, period, st.a, st.b, now, cost, counting)
  elseif algorithm == kSlidingWindow then
    allowed, remaining, reset_after, retry_after, st.a, st.b, st.c =
      DecideSlidingWindow(limit, period, st.a, st.b, st.c, now, cost)
  elseif algorithm == kTokenBucket then
    allowed, remaining, reset_after, retry_after, st.a, st.b, st.l =
      DecideTokenBucket(limit, capacity, period, st.a, st.b, now, cost, st.l)
  elseif algorithm == kGcra then
    allowed, remaining, reset_after, retry_after, st.a, st.b, st.l =
      DecideGcra(limit, capacity, period, st.a, st.b, now, cost, st.l)
  else
    allowed, remaining, reset_after, retry_after = DecideSlidingLog(limit, period, st.log, now,
      now_text, cost)
  end
  if (allowed == 1 or counting) and cost > 0 then
    st.dirty, st.algorithm, st.period, st.rate, st.burst = true, algorithm, period, limit, capacity
  end
  return allowed, remaining, reset_after, retry_after
end

local function SaveAny(key, st, now, now_text)
  local algorithm = st.algorithm
  if algorithm == kFixedWindow then
    SaveFixedWindow(key, st.a, st.b, st.period, now, st.e)
  elseif algorithm == kSlidingWindow then
    SaveSlidingWindow(key, st.a, st.b, st.c, st.period, now, st.e)
  elseif algorithm == kTokenBucket then
    SaveTokenBucket(key, st.a, st.b, st.rate, now, st.l, st.burst, st.period)
  elseif algorithm == kGcra then
    SaveGcra(key, st.a, st.b, now, st.l, st.rate, st.burst, st.period)
  else
    SaveSlidingLog(key, st.log, now, now_text)
  end
end

local function CheckAll(keys, args)
  if not Call then
    Init()
  end
  local n = #keys
  if n < 1 or n > kMaxChecks or #args ~= kArgvBase + n then
    Fail('expected 1 to ' .. kMaxChecks .. ' keys and one argument per key')
  end
  -- Every check is parsed before anything is read: {algorithm, limit, period, capacity, cost,
  -- counting, refund}.
  local checks = {}
  local algorithm_of_key = {}
  for i = 1, n do
    local algorithm, limit, period, capacity, cost, counting, refund =
      ParseCheck(args[kArgvBase + i], i)
    if counting and n > 1 then
      -- A check that records when denied has no place in an all-or-nothing call.
      Fail('check ' .. i .. ': a check counting rejected hits must be the only check')
    end
    local key = keys[i]
    local seen = algorithm_of_key[key]
    if seen ~= nil and seen ~= algorithm then
      -- One key holds one algorithm's state; the key scheme gives each algorithm its own key.
      Fail('check ' .. i .. ': key repeated with a different algorithm')
    end
    algorithm_of_key[key] = algorithm
    checks[i] = {algorithm, limit, period, capacity, cost, counting, refund}
  end
  local now = NowMicros(args)
  local now_text = Format('%d', now)

  -- reply[1] is all_allowed; check i's decision is at 5 * (i - 1) + 2 .. + 6.
  local reply = {1}
  local states = {}
  local distinct_keys = {}
  for i = 1, n do
    local key = keys[i]
    local c = checks[i]
    local st = states[key]
    if st == nil then
      st = LoadAny(c[1], key, i)
      states[key] = st
      distinct_keys[#distinct_keys + 1] = key
    end
    local r = 5 * (i - 1) + 1
    -- Decision.limit is the capacity.
    reply[r + 1], reply[r + 3], reply[r + 4], reply[r + 5] = DecideAny(c, st, now, now_text, c[5])
    reply[r + 2] = c[4]
    if reply[r + 1] ~= 1 then
      reply[1] = 0
    end
  end

  -- A check counting rejected hits is the only one, and records whether it passed or not.
  if reply[1] == 1 or checks[1][6] then
    for _, key in ipairs(distinct_keys) do
      local st = states[key]
      if st.dirty then
        SaveAny(key, st, now, now_text)
      end
    end
  else
    -- Nothing is written, so a fresh load is the stored state.
    local stored = {}
    for i = 1, n do
      local r = 5 * (i - 1) + 1
      if reply[r + 1] == 1 then
        local key = keys[i]
        local c = checks[i]
        if stored[key] == nil then
          stored[key] = LoadAny(c[1], key, i)
        end
        reply[r + 1], reply[r + 3], reply[r + 4], reply[r + 5] =
          DecideAny(c, stored[key], now, now_text, 0)
      end
    end
  end
  return Pack('<' .. string.rep('i8', 1 + 5 * n), unpack(reply, 1, 1 + 5 * n))
end
