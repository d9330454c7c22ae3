-- check_all_entry.lua: the entry of the multi-limit (all-or-nothing) script.
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
local checks = {}
local algorithm_of_key = {}
for i = 1, n do
  local lim, cost = ParseCheck(kArgvBase + 5 * (i - 1), i)
  local seen = algorithm_of_key[KEYS[i]]
  if seen ~= nil and seen ~= lim.name then
    -- One key holds one algorithm's state; the key scheme gives each algorithm its own key.
    Fail('check ' .. i .. ': key repeated with a different algorithm')
  end
  algorithm_of_key[KEYS[i]] = lim.name
  checks[i] = {lim = lim, cost = cost}
end
local now = NowMicros()

local states = {}
local distinct_keys = {}
local decisions = {}
local all_allowed = true
for i = 1, n do
  local key, check = KEYS[i], checks[i]
  local state = states[key]
  if state == nil then
    state = check.lim.impl.Load(key, i, check.lim, now)
    states[key] = state
    distinct_keys[#distinct_keys + 1] = key
  end
  decisions[i] = check.lim.impl.Decide(check.lim, state, now, check.cost)
  if decisions[i][1] ~= 1 then
    all_allowed = false
  end
end

if all_allowed then
  for _, key in ipairs(distinct_keys) do
    local state = states[key]
    if state.dirty then
      -- The state remembers the limit of the last check that changed it, for its expiry.
      state.lim.impl.Save(key, state, now)
    end
  end
else
  -- Nothing is written, so a fresh load is the stored state.
  local stored = {}
  for i = 1, n do
    if decisions[i][1] == 1 then
      local key, check = KEYS[i], checks[i]
      if stored[key] == nil then
        stored[key] = check.lim.impl.Load(key, i, check.lim, now)
      end
      decisions[i] = check.lim.impl.Decide(check.lim, stored[key], now, 0)
    end
  end
end

local reply = {0}
if all_allowed then
  reply[1] = 1
end
for i = 1, n do
  for j = 1, 5 do
    reply[#reply + 1] = decisions[i][j]
  end
end
return reply
