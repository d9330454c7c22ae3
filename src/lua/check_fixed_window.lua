-- check_fixed_window.lua: the single-check function of fixed_window limits.
--
-- keys[1]                  the state key (docs/keys.md)
-- args[kArgvBase + 1]      one fixed_window check (parse_check.lua)
-- Returns one decision, packed in kDecisionFormat.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written.

local function CheckFixedWindow(keys, args)
  if not Call then
    Init()
  end
  -- Everything is validated before anything is read or written.
  if #keys ~= 1 or #args ~= kArgvBase + 1 then
    Fail('expected 1 key and ' .. (kArgvBase + 1) .. ' arguments')
  end
  local _, limit, period, _, cost = ParseCheck(args[kArgvBase + 1], 1, kFixedWindow)
  local now = NowMicros(args)
  local key = keys[1]
  local window_start, count, expiry_ms = LoadFixedWindow(key, 1)
  local allowed, remaining, reset_after, retry_after
  allowed, remaining, reset_after, retry_after, window_start, count =
    DecideFixedWindow(limit, period, window_start, count, now, cost)
  if allowed == 1 and cost > 0 then
    SaveFixedWindow(key, window_start, count, period, now, expiry_ms)
  end
  return Pack(kDecisionFormat, allowed, limit, remaining, reset_after, retry_after)
end
