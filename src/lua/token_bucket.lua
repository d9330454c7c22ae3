-- token_bucket.lua: docs/algorithms.md, "token_bucket".
-- State: a hash {d = deficit (tokens missing from a full bucket, scaled by the period in us),
-- u = when the deficit was true (us)}.

local TokenBucket = {}

function TokenBucket.Load(key, key_index)
  local v = redis.call('HMGET', key, 'd', 'u')
  return {
    deficit = StateInt(v[1], key_index, 'd'),
    updated = StateInt(v[2], key_index, 'u'),
  }
end

function TokenBucket.Decide(lim, st, now, cost)
  local rate, burst, period = lim.limit, lim.capacity, lim.period
  -- t = max(now, updated): while the clock is behind `updated` (it stepped back) the bucket does
  -- not refill, and every wait starts at t, lag after now.
  local t = now
  if st.updated > t then
    t = st.updated
  end
  local lag = t - now
  -- Refill. Comparing with ceil(deficit / rate) first keeps elapsed * rate below 2^53.
  local deficit = st.deficit
  local elapsed = t - st.updated
  if deficit > 0 then
    if elapsed >= CeilDiv(deficit, rate) then
      deficit = 0
    else
      deficit = deficit - elapsed * rate
    end
  end
  local full = burst * period -- <= 2^50 (checked with the arguments)
  -- Time until the bucket is full again with `d` missing.
  local function ResetAfter(d)
    if d == 0 then
      return 0
    end
    return lag + CeilDiv(d, rate)
  end
  if cost > burst then
    return {0, burst, IDiv(Max0(full - deficit), period), ResetAfter(deficit), -1}
  end
  local needed = deficit + cost * period
  -- A peek is always allowed, even when a state written under a smaller burst is over it.
  if cost == 0 or needed <= full then
    if cost > 0 then
      st.deficit = needed
      st.updated = t
      st.lim = lim
      st.dirty = true
    end
    return {1, burst, IDiv(Max0(full - needed), period), ResetAfter(needed), 0}
  end
  return {0, burst, IDiv(Max0(full - deficit), period), ResetAfter(deficit),
    lag + CeilDiv(needed - full, rate)}
end

function TokenBucket.Save(key, st, now)
  redis.call('HSET', key, 'd', Int(st.deficit), 'u', Int(st.updated))
  -- The bucket is full again ceil(deficit / rate) after `updated`: now + reset_after.
  SetExpiry(key, st.updated + CeilDiv(st.deficit, st.lim.limit), now)
end
