-- check_all_entry.lua: the entry of the multi-limit (all-or-nothing) script, which holds every
-- algorithm's piece and picks one per check.
--
-- KEYS[1 .. n]                                 one state key per check, 1 <= n <= kMaxChecks
-- ARGV[kArgvBase + 5 * (i - 1) + 1 .. + 5]     check i: algorithm, limit, period_us, capacity, cost
-- Returns {all_allowed (1|0), then for each check i: allowed, limit, remaining, reset_after_us,
-- retry_after_us}: 1 + 5 * n integers.
--
-- Checks are decided in order against a tentative state per distinct key, so a key named twice
-- behaves as two checks applied one after the other. Only when every check is admitted is any
-- state written (all of them); otherwise nothing is written, each denied check reports its
-- decision, and each check that would have passed reports a peek (cost 0) of the stored state, as
-- Store::CheckAll() specifies.

local n = #KEYS
if n < 1 or n > kMaxChecks or #ARGV ~= kArgvBase + 5 * n then
  Fail('expected 1 to ' .. kMaxChecks .. ' keys and 5 arguments per key')
end
-- Check i's arguments, flattened: name, limit, period, capacity, cost at 5 * (i - 1) + 1 .. + 5.
local args = {}
local algorithm_of_key = {}
for i = 1, n do
  local name, limit, period, capacity, cost = ParseCheck(kArgvBase + 5 * (i - 1), i)
  local seen = algorithm_of_key[KEYS[i]]
  if seen ~= nil and seen ~= name then
    -- One key holds one algorithm's state; the key scheme gives each algorithm its own key.
    Fail('check ' .. i .. ': key repeated with a different algorithm')
  end
  algorithm_of_key[KEYS[i]] = name
  local base = 5 * (i - 1)
  args[base + 1], args[base + 2], args[base + 3], args[base + 4], args[base + 5] =
    name, limit, period, capacity, cost
end
local now = NowMicros()

-- A key's state: {a, b, c} (the fields of its string state; the sliding log keeps its own table
-- in `log`), `dirty` once an admission changed it, and what its expiry needs from the last check
-- that changed it (`period`, `rate`).
local function Load(key, i)
  local name = args[5 * (i - 1) + 1]
  local st = {}
  if name == 'fixed_window' then
    st.a, st.b = LoadFixedWindow(key, i)
  elseif name == 'sliding_window' then
    st.a, st.b, st.c = LoadSlidingWindow(key, i)
  elseif name == 'token_bucket' then
    st.a, st.b = LoadTokenBucket(key, i)
  elseif name == 'gcra' then
    st.a, st.b = LoadGcra(key, i)
  else
    st.log = LoadSlidingLog(key, i)
  end
  return st
end

-- Decides check i (with `cost`) against `st`; an admission with cost > 0 updates `st`. Returns
-- allowed, remaining, reset_after, retry_after.
local function Decide(i, st, cost)
  local base = 5 * (i - 1)
  local name, limit, period, capacity = args[base + 1], args[base + 2], args[base + 3],
    args[base + 4]
  local allowed, remaining, reset_after, retry_after
  if name == 'fixed_window' then
    allowed, remaining, reset_after, retry_after, st.a, st.b =
      DecideFixedWindow(limit, period, st.a, st.b, now, cost)
  elseif name == 'sliding_window' then
    allowed, remaining, reset_after, retry_after, st.a, st.b, st.c =
      DecideSlidingWindow(limit, period, st.a, st.b, st.c, now, cost)
  elseif name == 'token_bucket' then
    allowed, remaining, reset_after, retry_after, st.a, st.b =
      DecideTokenBucket(limit, capacity, period, st.a, st.b, now, cost)
  elseif name == 'gcra' then
    allowed, remaining, reset_after, retry_after, st.a, st.b =
      DecideGcra(limit, capacity, period, st.a, st.b, now, cost)
  else
    allowed, remaining, reset_after, retry_after = DecideSlidingLog(limit, period, st.log, now,
      cost)
  end
  if allowed == 1 and cost > 0 then
    -- The state remembers the limit of the last check that changed it, for its expiry.
    st.dirty, st.name, st.period, st.rate = true, name, period, limit
  end
  return allowed, remaining, reset_after, retry_after
end

local function Save(key, st)
  local name = st.name
  if name == 'fixed_window' then
    SaveFixedWindow(key, st.a, st.b, st.period, now)
  elseif name == 'sliding_window' then
    SaveSlidingWindow(key, st.a, st.b, st.c, st.period, now)
  elseif name == 'token_bucket' then
    SaveTokenBucket(key, st.a, st.b, st.rate, now)
  elseif name == 'gcra' then
    SaveGcra(key, st.a, st.b, now)
  else
    SaveSlidingLog(key, st.log, now)
  end
end

-- reply[1] is all_allowed; check i's decision is at 1 + 5 * (i - 1) + 1 .. + 5.
local reply = {1}
local states = {}
local distinct_keys = {}
for i = 1, n do
  local key = KEYS[i]
  local st = states[key]
  if st == nil then
    st = Load(key, i)
    states[key] = st
    distinct_keys[#distinct_keys + 1] = key
  end
  local r = 1 + 5 * (i - 1)
  reply[r + 1], reply[r + 3], reply[r + 4], reply[r + 5] = Decide(i, st, args[5 * (i - 1) + 5])
  -- Decision.limit is the capacity.
  reply[r + 2] = args[5 * (i - 1) + 4]
  if reply[r + 1] ~= 1 then
    reply[1] = 0
  end
end

if reply[1] == 1 then
  for _, key in ipairs(distinct_keys) do
    local st = states[key]
    if st.dirty then
      Save(key, st)
    end
  end
else
  -- Nothing is written, so a fresh load is the stored state.
  local stored = {}
  for i = 1, n do
    local r = 1 + 5 * (i - 1)
    if reply[r + 1] == 1 then
      local key = KEYS[i]
      if stored[key] == nil then
        stored[key] = Load(key, i)
      end
      reply[r + 1], reply[r + 3], reply[r + 4], reply[r + 5] = Decide(i, stored[key], 0)
    end
  end
end
return reply
