-- sliding_window.lua: docs/algorithms.md, "sliding_window" (two-window weighted counter).
-- State: a hash {w = window start (us), cur = current count, prev = previous count}.

local SlidingWindow = {}

function SlidingWindow.Load(key, key_index)
  local v = redis.call('HMGET', key, 'w', 'cur', 'prev')
  return {
    window_start = StateInt(v[1], key_index, 'w'),
    current = StateInt(v[2], key_index, 'cur'),
    previous = StateInt(v[3], key_index, 'prev'),
  }
end

function SlidingWindow.Decide(lim, st, now, cost)
  local limit, period = lim.limit, lim.period
  -- Counts recorded under a larger limit are capped, which keeps every product below 2^53.
  local current, previous = math.min(st.current, limit), math.min(st.previous, limit)
  -- As for the fixed window, a backward time step keeps counting in the recorded window.
  local m = now
  if st.window_start > m then
    m = st.window_start
  end
  local window = m - IMod(m, period)
  -- Roll the state forward to that window.
  if st.window_start >= window then
    -- Same window: keep both counts.
  elseif st.window_start >= window - period then
    previous, current = current, 0
  else
    previous, current = 0, 0
  end
  local period_ms = period / 1000 -- exact: the period is a whole number of ms
  local elapsed = now - window -- negative only when time went backwards
  local elapsed_ms = IDiv(Max0(elapsed), 1000)
  local capacity_scaled = limit * period_ms -- <= 2^50 (checked with the arguments)
  local previous_weight = previous * (period_ms - elapsed_ms)

  local admitted = cost <= limit and
    (cost == 0 or previous_weight + (current + cost) * period_ms <= capacity_scaled)
  local current_after = current
  if admitted then
    current_after = current + cost
  end
  local remaining = 0
  local room = capacity_scaled - (previous_weight + current_after * period_ms)
  if room > 0 then
    remaining = IDiv(room, period_ms)
  end
  local reset_after = 0
  if current_after > 0 then
    reset_after = 2 * period - elapsed
  elseif previous > 0 then
    reset_after = period - elapsed
  end

  if admitted then
    if cost > 0 then
      st.window_start = window
      st.current = current_after
      st.previous = previous
      st.lim = lim
      st.dirty = true
    end
    return {1, limit, remaining, reset_after, 0}
  end
  if cost > limit then
    return {0, limit, remaining, reset_after, -1}
  end
  -- 1. Later in this window, as the previous window's weight decays by whole ms.
  if current + cost <= limit and previous > 0 then
    local t_ms = period_ms - IDiv((limit - current - cost) * period_ms, previous)
    if t_ms < period_ms then
      return {0, limit, remaining, reset_after, t_ms * 1000 - elapsed}
    end
  end
  -- 2. In the next window, where previous = current and current = 0. t_ms is 0 (admitted at the
  -- window's start) when step 1 failed only because its t_ms reached period_ms.
  local retry_after = period - elapsed
  if current > 0 then
    local t_ms = Max0(period_ms - IDiv((limit - cost) * period_ms, current))
    retry_after = retry_after + t_ms * 1000
  end
  return {0, limit, remaining, reset_after, retry_after}
end

function SlidingWindow.Save(key, st, now)
  redis.call('HSET', key, 'w', Int(st.window_start), 'cur', Int(st.current), 'prev',
    Int(st.previous))
  -- now + reset_after: the end of the window after the recorded one.
  SetExpiry(key, st.window_start + 2 * st.lim.period, now)
end
