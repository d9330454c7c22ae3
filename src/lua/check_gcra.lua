-- check_gcra.lua: the entry of the gcra single-check script. It is composed
-- from common, time, gcra, parse_check and this piece only, so a call runs no other
-- algorithm's code.
--
-- KEYS[1]                       the state key (docs/keys.md)
-- ARGV[kArgvBase + 1 .. + 5]    'gcra', limit, period_us, capacity, cost
--                               (parse_check.lua)
-- Returns {allowed (1|0), limit, remaining, reset_after_us, retry_after_us}, all integers.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written.

local rate, period, burst, cost = ParseSingleCheck('gcra')
local now = NowMicros()
local key = KEYS[1]
local tat_us, tat_frac = LoadGcra(key, 1)
local allowed, remaining, reset_after, retry_after
allowed, remaining, reset_after, retry_after, tat_us, tat_frac =
  DecideGcra(rate, burst, period, tat_us, tat_frac, now, cost)
if allowed == 1 and cost > 0 then
  SaveGcra(key, tat_us, tat_frac, now)
end
return {allowed, burst, remaining, reset_after, retry_after}
