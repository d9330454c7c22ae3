-- check_fixed_window.lua: the entry of the fixed_window single-check script. It is composed
-- from common, time, fixed_window, parse_check and this piece only, so a call runs no other
-- algorithm's code.
--
-- KEYS[1]                       the state key (docs/keys.md)
-- ARGV[kArgvBase + 1 .. + 5]    'fixed_window', limit, period_us, capacity, cost
--                               (parse_check.lua)
-- Returns {allowed (1|0), limit, remaining, reset_after_us, retry_after_us}, all integers.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written.

local limit, period, _, cost = ParseSingleCheck('fixed_window')
local now = NowMicros()
local key = KEYS[1]
local window_start, count = LoadFixedWindow(key, 1)
local allowed, remaining, reset_after, retry_after
allowed, remaining, reset_after, retry_after, window_start, count =
  DecideFixedWindow(limit, period, window_start, count, now, cost)
if allowed == 1 and cost > 0 then
  SaveFixedWindow(key, window_start, count, period, now)
end
return {allowed, limit, remaining, reset_after, retry_after}
