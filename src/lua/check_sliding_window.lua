-- check_sliding_window.lua: the single-check function of sliding_window limits.
--
-- keys[1]                  the state key (docs/keys.md)
-- args[kArgvBase + 1]      one sliding_window check (parse_check.lua)
-- Returns one decision, packed in kDecisionFormat.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written;
-- a credit (kRefund) is one: only check_all decides credits.

local function CheckSlidingWindow(keys, args)
  if not Call then
    Init()
  end
  -- Everything is validated before anything is read or written.
  if #keys ~= 1 or #args ~= kArgvBase + 1 then
    Fail('expected 1 key and ' .. (kArgvBase + 1) .. ' arguments')
  end
  local _, limit, period, _, cost = ParseCheck(args[kArgvBase + 1], 1, kSlidingWindow)
  local now = NowMicros(args)
  local key = keys[1]
  local window_start, current, previous, expiry_ms = LoadSlidingWindow(key, 1)
  local allowed, remaining, reset_after, retry_after
  allowed, remaining, reset_after, retry_after, window_start, current, previous =
    DecideSlidingWindow(limit, period, window_start, current, previous, now, cost)
  if allowed == 1 and cost > 0 then
    SaveSlidingWindow(key, window_start, current, previous, period, now, expiry_ms)
  end
  return Pack(kDecisionFormat, allowed, limit, remaining, reset_after, retry_after)
end
