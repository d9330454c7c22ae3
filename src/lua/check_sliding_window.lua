-- check_sliding_window.lua: the entry of the sliding_window single-check script. It is composed
-- from common, time, sliding_window, parse_check and this piece only, so a call runs no other
-- algorithm's code.
--
-- KEYS[1]                       the state key (docs/keys.md)
-- ARGV[kArgvBase + 1 .. + 5]    'sliding_window', limit, period_us, capacity, cost
--                               (parse_check.lua)
-- Returns {allowed (1|0), limit, remaining, reset_after_us, retry_after_us}, all integers.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written.

local limit, period, _, cost = ParseSingleCheck('sliding_window')
local now = NowMicros()
local key = KEYS[1]
local window_start, current, previous = LoadSlidingWindow(key, 1)
local allowed, remaining, reset_after, retry_after
allowed, remaining, reset_after, retry_after, window_start, current, previous =
  DecideSlidingWindow(limit, period, window_start, current, previous, now, cost)
if allowed == 1 and cost > 0 then
  SaveSlidingWindow(key, window_start, current, previous, period, now)
end
return {allowed, limit, remaining, reset_after, retry_after}
