-- check_gcra.lua: the single-check function of gcra limits.
--
-- keys[1]                  the state key (docs/keys.md)
-- args[kArgvBase + 1]      one gcra check (parse_check.lua); capacity is the burst
-- Returns one decision, packed in kDecisionFormat; its limit is the burst.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written;
-- a credit (kRefund) is one: only check_all decides credits.

local function CheckGcra(keys, args)
  if not Call then
    Init()
  end
  -- Everything is validated before anything is read or written.
  if #keys ~= 1 or #args ~= kArgvBase + 1 then
    Fail('expected 1 key and ' .. (kArgvBase + 1) .. ' arguments')
  end
  local _, rate, period, burst, cost = ParseCheck(args[kArgvBase + 1], 1, kGcra)
  local now = NowMicros(args)
  local key = keys[1]
  local tat_us, tat_frac, leases = LoadGcra(key, 1)
  local allowed, remaining, reset_after, retry_after
  allowed, remaining, reset_after, retry_after, tat_us, tat_frac, leases =
    DecideGcra(rate, burst, period, tat_us, tat_frac, now, cost, leases)
  if allowed == 1 and cost > 0 then
    SaveGcra(key, tat_us, tat_frac, now, leases, rate, burst, period)
  end
  return Pack(kDecisionFormat, allowed, burst, remaining, reset_after, retry_after)
end
