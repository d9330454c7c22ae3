-- fixed_window.lua: docs/algorithms.md, "fixed_window".
-- State: a hash {w = window start (us), c = count}. No key = (0, 0).
-- Decisions are arrays {allowed (1/0), limit, remaining, reset_after_us, retry_after_us}.

local FixedWindow = {}

function FixedWindow.Load(key, key_index)
  local v = redis.call('HMGET', key, 'w', 'c')
  return {
    window_start = StateInt(v[1], key_index, 'w'),
    count = StateInt(v[2], key_index, 'c'),
  }
end

-- Decides `cost` against `st` at `now`. When admitted with cost > 0, updates `st` and marks it
-- dirty; it never writes to Redis (the entry scripts decide everything before committing).
function FixedWindow.Decide(lim, st, now, cost)
  local limit, period = lim.limit, lim.period
  -- After a backward time step `now` may fall before the recorded window; that window stays the
  -- current one, so a step back never hands out a fresh quota.
  local m = now
  if st.window_start > m then
    m = st.window_start
  end
  local window = m - IMod(m, period)
  local count = st.count
  if st.window_start < window then
    count = 0
  end
  local reset_after = window + period - now
  if cost > limit then
    return {0, limit, Max0(limit - count), reset_after, -1}
  end
  -- A peek is always allowed, even when a state written under a smaller limit holds more.
  if cost == 0 or count + cost <= limit then
    if cost > 0 then
      st.window_start = window
      st.count = count + cost
      st.lim = lim
      st.dirty = true
    end
    return {1, limit, Max0(limit - count - cost), reset_after, 0}
  end
  -- The next window has the full quota and cost <= limit.
  return {0, limit, Max0(limit - count), reset_after, reset_after}
end

function FixedWindow.Save(key, st, now)
  redis.call('HSET', key, 'w', Int(st.window_start), 'c', Int(st.count))
  SetExpiry(key, st.window_start + st.lim.period, now)
end
