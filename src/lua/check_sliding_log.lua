-- check_sliding_log.lua: the entry of the sliding_log single-check script. It is composed
-- from common, time, sliding_log, parse_check and this piece only, so a call runs no other
-- algorithm's code.
--
-- KEYS[1]                       the state key (docs/keys.md)
-- ARGV[kArgvBase + 1 .. + 5]    'sliding_log', limit, period_us, capacity, cost
--                               (parse_check.lua)
-- Returns {allowed (1|0), limit, remaining, reset_after_us, retry_after_us}, all integers.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written.

local limit, period, _, cost = ParseSingleCheck('sliding_log')
local now = NowMicros()
local key = KEYS[1]
local log = LoadSlidingLog(key, 1)
local allowed, remaining, reset_after, retry_after = DecideSlidingLog(limit, period, log, now, cost)
if allowed == 1 and cost > 0 then
  SaveSlidingLog(key, log, now)
end
return {allowed, limit, remaining, reset_after, retry_after}
