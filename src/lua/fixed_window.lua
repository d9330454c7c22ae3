-- fixed_window.lua: docs/algorithms.md, "fixed_window".
-- State: the string 'w:c' (window start in us, count); no key = (0, 0).
--
-- The algorithm pieces are plain functions with multiple return values, shared by the
-- fixed_window check script and check_all: Load reads the state, Decide is pure, Save writes the
-- state and its expiry in one command.

local function LoadFixedWindow(key, key_index)
  local v = redis.call('GET', key)
  if not v then
    return 0, 0
  end
  local w, c = string.match(v, '^(%d+):(%d+)$')
  return StateInt(w, key_index), StateInt(c, key_index)
end

-- Decides `cost` at `now` against the state (window_start, count). Returns allowed (1|0),
-- remaining, reset_after, retry_after and the state after the decision, which differs from the
-- one passed in only when the request was admitted with cost > 0 (only then is it written).
local function DecideFixedWindow(limit, period, window_start, count, now, cost)
  -- After a backward time step `now` may fall before the recorded window; that window stays the
  -- current one, so a step back never hands out a fresh quota.
  local m = now
  if window_start > m then
    m = window_start
  end
  local window = IDiv(m, period) * period
  local used = count
  if window_start < window then
    used = 0
  end
  local reset_after = window + period - now
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

-- Expires at the end of the window: W + P.
local function SaveFixedWindow(key, window_start, count, period, now)
  SetState(key, string.format('%d:%d', window_start, count), window_start + period, now)
end
