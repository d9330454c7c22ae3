-- check_token_bucket.lua: the single-check function of token_bucket limits.
--
-- keys[1]                  the state key (docs/keys.md)
-- args[kArgvBase + 1]      one token_bucket check (parse_check.lua); capacity is the burst
-- Returns one decision, packed in kDecisionFormat; its limit is the burst.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written;
-- a credit (kRefund) is one: only check_all decides credits.

local function CheckTokenBucket(keys, args)
  if not Call then
    Init()
  end
  -- Everything is validated before anything is read or written.
  if #keys ~= 1 or #args ~= kArgvBase + 1 then
    Fail('expected 1 key and ' .. (kArgvBase + 1) .. ' arguments')
  end
  local _, rate, period, burst, cost = ParseCheck(args[kArgvBase + 1], 1, kTokenBucket)
  local now = NowMicros(args)
  local key = keys[1]
  local deficit, updated, leases = LoadTokenBucket(key, 1)
  local allowed, remaining, reset_after, retry_after
  allowed, remaining, reset_after, retry_after, deficit, updated, leases =
    DecideTokenBucket(rate, burst, period, deficit, updated, now, cost, leases)
  if allowed == 1 and cost > 0 then
    SaveTokenBucket(key, deficit, updated, rate, now, leases, burst, period)
  end
  return Pack(kDecisionFormat, allowed, burst, remaining, reset_after, retry_after)
end
