-- check_token_bucket.lua: the entry of the token_bucket single-check script. It is composed
-- from common, time, token_bucket, parse_check and this piece only, so a call runs no other
-- algorithm's code.
--
-- KEYS[1]                       the state key (docs/keys.md)
-- ARGV[kArgvBase + 1 .. + 5]    'token_bucket', limit, period_us, capacity, cost
--                               (parse_check.lua)
-- Returns {allowed (1|0), limit, remaining, reset_after_us, retry_after_us}, all integers.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written.

local rate, period, burst, cost = ParseSingleCheck('token_bucket')
local now = NowMicros()
local key = KEYS[1]
local deficit, updated = LoadTokenBucket(key, 1)
local allowed, remaining, reset_after, retry_after
allowed, remaining, reset_after, retry_after, deficit, updated =
  DecideTokenBucket(rate, burst, period, deficit, updated, now, cost)
if allowed == 1 and cost > 0 then
  SaveTokenBucket(key, deficit, updated, rate, now)
end
return {allowed, burst, remaining, reset_after, retry_after}
