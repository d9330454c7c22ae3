-- check_fixed_window.lua: the single-check function of fixed_window limits.
--
-- keys[1]                  the state key (docs/keys.md)
-- args[kArgvBase + 1]      one fixed_window check (parse_check.lua)
-- Returns one decision, packed in kDecisionFormat.
-- Errors: 'SLUICE_BADARG ...' for invalid arguments, raised before anything is read or written;
-- a credit (kRefund) is one: only check_all decides credits.
--
-- The fixed window is sluice's default and cheapest algorithm, where each Lua call (which costs
-- Redis about as much as a command; docs/redis.md, "Cost per call") weighs most. So this function
-- does inline what ParseCheck, LoadFixedWindow, DecideFixedWindow and SaveFixedWindow do for
-- check_all: the same steps, in the same order. Every test vector and the random sequences run
-- through both (lua_vectors_test), as do the invalid arguments (lua_scripts_test), so the two
-- cannot drift apart unnoticed.

local function CheckFixedWindow(keys, args)
  if not Call then
    Init()
  end
  -- Everything is validated before anything is read or written: the tests of ParseCheck for a
  -- fixed window, which explains any refusal.
  if #keys ~= 1 or #args ~= kArgvBase + 1 then
    Fail('expected 1 key and ' .. (kArgvBase + 1) .. ' arguments')
  end
  local check = args[kArgvBase + 1]
  if #check ~= kCheckBytes then
    ParseCheck(check, 1, kFixedWindow)
  end
  local algorithm, limit, period, capacity, cost = Unpack(kCheckFormat, check)
  -- A check counting rejected hits (kCountRejected) is decided as DecideFixedWindow does with
  -- `counting`.
  local counting = algorithm == kFixedWindow + kCountRejected
  if counting then
    algorithm = kFixedWindow
  end
  -- Any other byte, a credit's (kRefund added) included, is not kFixedWindow here: ParseCheck
  -- then refuses it and says why (a credit goes through check_all).
  if algorithm ~= kFixedWindow or limit < 1 or period < 1000 or period > kMaxPeriodUs or
      period % 1000 ~= 0 or capacity ~= limit or cost > kMaxCost then
    ParseCheck(check, 1, kFixedWindow)
    Fail('check 1: invalid')
  end
  local now = NowMicros(args)
  -- LoadFixedWindow.
  local key = keys[1]
  local window_start, count, expiry_ms = 0, 0, -1
  local v = Call('GET', key)
  if v then
    if #v == kFixedWindowStateBytes then
      window_start, count, expiry_ms = Unpack(kFixedWindowState, v)
      if window_start > kMaxTimeUs or count > kMaxTimeUs then
        FailState(1, 'stored state')
      end
    else
      window_start, count, expiry_ms = ParseFixedWindow(v, 1)
    end
  end
  -- DecideFixedWindow.
  local m = now
  if window_start > m then
    m = window_start
  end
  local window = m - m % period
  if window > m then
    window = window - period
  elseif window + period <= m then
    window = window + period
  end
  local used = count
  if window_start < window then
    used = 0
  end
  local reset_after = window + period - now
  if counting then
    local allowed, left, _, retry_after, w, c =
      DecideFixedWindow(limit, period, window_start, count, now, cost, true)
    if cost > 0 then
      local expiry = (w + period) / 1000
      local value = Pack(kFixedWindowState, w, c, expiry)
      if expiry == expiry_ms then
        Call('SET', key, value, 'KEEPTTL')
      else
        SetState(key, value, expiry, now)
      end
    end
    return Pack(kDecisionFormat, allowed, limit, left, reset_after, retry_after)
  end
  local remaining = limit - used
  if remaining < 0 then
    remaining = 0
  end
  if cost > limit then
    return Pack(kDecisionFormat, 0, limit, remaining, reset_after, -1)
  end
  if cost == 0 then
    return Pack(kDecisionFormat, 1, limit, remaining, reset_after, 0)
  end
  if used + cost > limit then
    return Pack(kDecisionFormat, 0, limit, remaining, reset_after, reset_after)
  end
  -- SaveFixedWindow.
  local expiry = (window + period) / 1000
  local value = Pack(kFixedWindowState, window, used + cost, expiry)
  if expiry == expiry_ms then
    Call('SET', key, value, 'KEEPTTL')
  else
    SetState(key, value, expiry, now)
  end
  return Pack(kDecisionFormat, 1, limit, limit - used - cost, reset_after, 0)
end
