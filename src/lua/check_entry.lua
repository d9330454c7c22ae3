-- check_entry.lua: the entry of the single-check script.
--
-- KEYS[1]                       the state key (docs/keys.md)
-- ARGV[kArgvBase + 1 .. + 5]    algorithm, limit, period_us, capacity, cost (parse_check.lua)
-- Returns {allowed (1|0), limit, remaining, reset_after_us, retry_after_us}, all integers.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is written.

if #KEYS ~= 1 or #ARGV ~= kArgvBase + 5 then
  Fail('expected 1 key and ' .. (kArgvBase + 5) .. ' arguments')
end
local lim, cost = ParseCheck(kArgvBase, 1)
local now = NowMicros()
local state = lim.impl.Load(KEYS[1], 1, lim, now)
local decision = lim.impl.Decide(lim, state, now, cost)
if state.dirty then
  lim.impl.Save(KEYS[1], state, now)
end
return decision
