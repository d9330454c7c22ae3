-- fixed_window.lua: docs/algorithms.md, "fixed_window".
-- State: '<I8I8I8' = window start (us), count, and the expiry (ms) the key was written with;
-- no key = (0, 0). An earlier version wrote 'w:c' in decimal, which is still read.
--
-- The algorithm pieces are plain functions with multiple return values: Load reads the state,
-- Decide is pure, Save writes the state and its expiry in one command. check_all calls them; the
-- fixed_window check function does the same steps inline (check_fixed_window.lua says why), so a
-- change here is a change there.

local kFixedWindowState = '<I8I8I8'
local kFixedWindowStateBytes = 24
-- The most a count reaches when it counts rejected hits (kFixedWindowCountCap in C++): 2^50.
local kFixedWindowCountCap = 1125899906842624

-- Returns window start, count and the key's expiry in ms (-1 when unknown) of the stored value
-- `v` (false: no key).
local function ParseFixedWindow(v, key_index)
  if not v then
    return 0, 0, -1
  end
  if #v == kFixedWindowStateBytes then
    local w, c, e = Unpack(kFixedWindowState, v)
    if w > kMaxTimeUs or c > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return w, c, e
  end
  local w, c = Match(v, '^(%d+):(%d+)$')
  return StateInt(w, key_index), StateInt(c, key_index), -1
end

local function LoadFixedWindow(key, key_index)
  return ParseFixedWindow(Call('GET', key), key_index)
end

-- Decides `cost` at `now` against the state (window_start, count). Returns allowed (1|0),
-- remaining, reset_after, retry_after and the state after the decision, which differs from the
-- one passed in only when the request was admitted with cost > 0 (only then is it written), or,
-- with `counting` (the check counts rejected hits), whenever cost > 0.
local function DecideFixedWindow(limit, period, window_start, count, now, cost, counting)
  -- After a backward time step `now` may fall before the recorded window; that window stays the
  -- current one, so a step back never hands out a fresh quota.
  local m = now
  if window_start > m then
    m = window_start
  end
  -- m rounded down to a multiple of the period: m % period is m - floor(m / period) * period in
  -- doubles, exact except that the floor of a rounded quotient may be one off, which the two tests
  -- correct (IDiv's correction, without a call: a Lua call costs Redis as much as a command).
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
    -- DecideFixedWindowCounting: every cost is recorded, admitted or not, up to the cap.
    local after = used + cost
    if after > kFixedWindowCountCap then
      after = kFixedWindowCountCap
    end
    local w, c = window_start, count
    if cost > 0 then
      w, c = window, after
    end
    if after <= limit then
      return 1, limit - after, reset_after, 0, w, c
    end
    -- A denial reports the count it found (the reference's stats need the counter before).
    local left = limit - used
    if left < 0 then
      left = 0
    end
    if cost > limit then
      return 0, left, reset_after, -1, w, c
    end
    return 0, left, reset_after, reset_after, w, c
  end
  local remaining = limit - used
  if remaining < 0 then
    remaining = 0
  end
  if cost > limit then
    return 0, remaining, reset_after, -1, window_start, count
  end
  -- A peek is always allowed, even when a state written under a smaller limit holds more.
  if cost == 0 then
    return 1, remaining, reset_after, 0, window_start, count
  end
  if used + cost <= limit then
    return 1, limit - used - cost, reset_after, 0, window, used + cost
  end
  -- The next window has the full quota and cost <= limit.
  return 0, remaining, reset_after, reset_after, window_start, count
end

-- Gives back `units` charged earlier (docs/algorithms.md, "Credits") at `now` against the state
-- (window_start, count): the count of the window a check would count in goes down, never below 0
-- (a count of an earlier window is not this window's: there is nothing to give back). Returns
-- allowed (always 1), remaining, reset_after, retry_after (0), which are a peek of the state after
-- the credit, that state, and whether it changed (only then is it written, with its expiry W + P
-- as an admission in the window writes it).
local function CreditFixedWindow(limit, period, window_start, count, now, units)
  local window = WindowOf(window_start, now, period)
  local changed = false
  if window_start >= window and count > 0 and units > 0 then
    local after = count - units
    if after < 0 then
      after = 0
    end
    window_start, count, changed = window, after, true
  end
  local _, remaining, reset_after =
    DecideFixedWindow(limit, period, window_start, count, now, 0, false)
  return 1, remaining, reset_after, 0, window_start, count, changed
end

-- Expires at the end of the window: W + P, a whole ms (W is a multiple of P). Within one window
-- under one period the expiry does not change, so the key keeps its TTL.
local function SaveFixedWindow(key, window_start, count, period, now, stored_expiry_ms)
  local expiry_ms = (window_start + period) / 1000
  local value = Pack(kFixedWindowState, window_start, count, expiry_ms)
  if expiry_ms == stored_expiry_ms then
    Call('SET', key, value, 'KEEPTTL')
  else
    SetState(key, value, expiry_ms, now)
  end
end
