-- sliding_window.lua: docs/algorithms.md, "sliding_window" (two-window weighted counter).
-- State: '<I8I8I8I8' = window start (us), current and previous count, and the expiry (ms) the
-- key was written with; no key = (0, 0, 0). An earlier version wrote 'w:cur:prev' in decimal,
-- which is still read.

local kSlidingWindowState = '<I8I8I8I8'
local kSlidingWindowStateBytes = 32

-- Returns window start, current count, previous count and the key's expiry in ms (-1 when
-- unknown).
local function LoadSlidingWindow(key, key_index)
  local v = Call('GET', key)
  if not v then
    return 0, 0, 0, -1
  end
  if #v == kSlidingWindowStateBytes then
    local w, cur, prev, e = Unpack(kSlidingWindowState, v)
    if w > kMaxTimeUs or cur > kMaxTimeUs or prev > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return w, cur, prev, e
  end
  local w, cur, prev = Match(v, '^(%d+):(%d+):(%d+)$')
  return StateInt(w, key_index), StateInt(cur, key_index), StateInt(prev, key_index), -1
end

-- Decides `cost` at `now` against (window_start, current, previous). Returns allowed (1|0),
-- remaining, reset_after, retry_after and the state after the decision, which differs from the
-- one passed in only when the request was admitted with cost > 0.
local function DecideSlidingWindow(limit, period, window_start, current, previous, now, cost)
  -- Counts recorded under a larger limit are capped, which keeps every product below 2^53.
  local cur, prev = current, previous
  if cur > limit then
    cur = limit
  end
  if prev > limit then
    prev = limit
  end
  -- As for the fixed window, a backward time step keeps counting in the recorded window.
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
  -- Roll the state forward to that window (same window: keep both counts).
  if window_start < window then
    if window_start >= window - period then
      prev, cur = cur, 0
    else
      prev, cur = 0, 0
    end
  end
  local period_ms = period / 1000 -- exact: the period is a whole number of ms
  local elapsed = now - window -- negative only when time went backwards
  local elapsed_ms = 0
  if elapsed > 0 then
    elapsed_ms = IDiv(elapsed, 1000)
  end
  local capacity_scaled = limit * period_ms -- <= 2^50 (checked with the arguments)
  local previous_weight = prev * (period_ms - elapsed_ms)

  local admitted = cost <= limit and
    (cost == 0 or previous_weight + (cur + cost) * period_ms <= capacity_scaled)
  local current_after = cur
  if admitted then
    current_after = cur + cost
  end
  local remaining = 0
  local room = capacity_scaled - (previous_weight + current_after * period_ms)
  if room > 0 then
    remaining = IDiv(room, period_ms)
  end
  local reset_after = 0
  if current_after > 0 then
    reset_after = 2 * period - elapsed
  elseif prev > 0 then
    reset_after = period - elapsed
  end

  if admitted then
    if cost > 0 then
      return 1, remaining, reset_after, 0, window, current_after, prev
    end
    return 1, remaining, reset_after, 0, window_start, current, previous
  end
  if cost > limit then
    return 0, remaining, reset_after, -1, window_start, current, previous
  end
  -- 1. Later in this window, as the previous window's weight decays by whole ms.
  if cur + cost <= limit and prev > 0 then
    local t_ms = period_ms - IDiv((limit - cur - cost) * period_ms, prev)
    if t_ms < period_ms then
      return 0, remaining, reset_after, t_ms * 1000 - elapsed, window_start, current, previous
    end
  end
  -- 2. In the next window, where previous = current and current = 0. t_ms is 0 (admitted at the
  -- window's start) when step 1 failed only because its t_ms reached period_ms.
  local retry_after = period - elapsed
  if cur > 0 then
    local t_ms = period_ms - IDiv((limit - cost) * period_ms, cur)
    if t_ms > 0 then
      retry_after = retry_after + t_ms * 1000
    end
  end
  return 0, remaining, reset_after, retry_after, window_start, current, previous
end

-- Gives back `units` charged earlier (docs/algorithms.md, "Credits") at `now` against
-- (window_start, current, previous): the state rolled forward to the window a check would count
-- in and capped at the limit, as DecideSlidingWindow reads it; then the current count goes down,
-- never below 0 (the previous window's count is what it spent, and stays). Returns allowed
-- (always 1), remaining, reset_after, retry_after (0), which are a peek of the state after the
-- credit, that state, and whether it changed (only then is it written, expiring at W + 2P).
local function CreditSlidingWindow(limit, period, window_start, current, previous, now, units)
  local cur, prev = current, previous
  if cur > limit then
    cur = limit
  end
  if prev > limit then
    prev = limit
  end
  -- The window and the roll of DecideSlidingWindow.
  local window = WindowOf(window_start, now, period)
  if window_start < window then
    if window_start >= window - period then
      prev, cur = cur, 0
    else
      prev, cur = 0, 0
    end
  end
  local changed = false
  if cur > 0 and units > 0 then
    local after = cur - units
    if after < 0 then
      after = 0
    end
    window_start, current, previous, changed = window, after, prev, true
  end
  local _, remaining, reset_after =
    DecideSlidingWindow(limit, period, window_start, current, previous, now, 0)
  return 1, remaining, reset_after, 0, window_start, current, previous, changed
end

-- now + reset_after: the end of the window after the recorded one, W + 2P, a whole ms. Within
-- one window under one period the expiry does not change, so the key keeps its TTL.
local function SaveSlidingWindow(key, window_start, current, previous, period, now,
    stored_expiry_ms)
  local expiry_ms = (window_start + 2 * period) / 1000
  local value = Pack(kSlidingWindowState, window_start, current, previous, expiry_ms)
  if expiry_ms == stored_expiry_ms then
    Call('SET', key, value, 'KEEPTTL')
  else
    SetState(key, value, expiry_ms, now)
  end
end
