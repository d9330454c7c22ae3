-- check_sliding_log.lua: the single-check function of sliding_log limits.
--
-- keys[1]                  the state key (docs/keys.md)
-- args[kArgvBase + 1]      one sliding_log check (parse_check.lua)
-- Returns one decision, packed in kDecisionFormat.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written;
-- a credit (kRefund) is one: only check_all decides credits.

local function CheckSlidingLog(keys, args)
  if not Call then
    Init()
  end
  -- Everything is validated before anything is read or written.
  if #keys ~= 1 or #args ~= kArgvBase + 1 then
    Fail('expected 1 key and ' .. (kArgvBase + 1) .. ' arguments')
  end
  local _, limit, period, _, cost = ParseCheck(args[kArgvBase + 1], 1, kSlidingLog)
  local now = NowMicros(args)
  local now_text = Format('%d', now)
  local key = keys[1]
  local log = LoadSlidingLog(key, 1)
  local allowed, remaining, reset_after, retry_after = DecideSlidingLog(limit, period, log, now,
    now_text, cost)
  if allowed == 1 and cost > 0 then
    SaveSlidingLog(key, log, now, now_text)
  end
  return Pack(kDecisionFormat, allowed, limit, remaining, reset_after, retry_after)
end
