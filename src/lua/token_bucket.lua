-- token_bucket.lua: docs/algorithms.md, "token_bucket".
-- State: '<I8I8' = the deficit (tokens missing from a full bucket, scaled by the period in us)
-- and when it was true (us); no key = (0, 0), a full bucket. An earlier version wrote 'd:u' in
-- decimal, which is still read.

local kTokenBucketState = '<I8I8'
local kTokenBucketStateBytes = 16

local function LoadTokenBucket(key, key_index)
  local v = Call('GET', key)
  if not v then
    return 0, 0
  end
  if #v == kTokenBucketStateBytes then
    local d, u = Unpack(kTokenBucketState, v)
    if d > kMaxTimeUs or u > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return d, u
  end
  local d, u = Match(v, '^(%d+):(%d+)$')
  return StateInt(d, key_index), StateInt(u, key_index)
end

-- Decides `cost` at `now` against (deficit, updated). Returns allowed (1|0), remaining,
-- reset_after, retry_after and the state after the decision, which differs from the one passed in
-- only when the request was admitted with cost > 0.
local function DecideTokenBucket(rate, burst, period, deficit, updated, now, cost)
  -- t = max(now, updated): while the clock is behind `updated` (it stepped back) the bucket does
  -- not refill, and every wait starts at t, lag after now.
  local t = now
  if updated > t then
    t = updated
  end
  local lag = t - now
  -- Refill. Comparing with ceil(deficit / rate) first keeps elapsed * rate below 2^53.
  local d = deficit
  if d > 0 then
    local elapsed = t - updated
    if elapsed >= CeilDiv(d, rate) then
      d = 0
    else
      d = d - elapsed * rate
    end
  end
  local full = burst * period -- <= 2^50 (checked with the arguments)
  -- The deficit the decision reports on: after the admission when admitted, else the current one.
  local allowed, retry_after = 0, -1
  if cost <= burst then
    local needed = d + cost * period
    -- A peek is always allowed, even when a state written under a smaller burst is over it.
    if cost == 0 or needed <= full then
      allowed, retry_after = 1, 0
      d = needed
      if cost > 0 then
        deficit, updated = needed, t
      end
    else
      retry_after = lag + CeilDiv(needed - full, rate)
    end
  end
  local remaining = 0
  if full > d then
    remaining = IDiv(full - d, period)
  end
  -- Time until the bucket is full again.
  local reset_after = 0
  if d > 0 then
    reset_after = lag + CeilDiv(d, rate)
  end
  return allowed, remaining, reset_after, retry_after, deficit, updated
end

-- The bucket is full again ceil(deficit / rate) after `updated`: now + reset_after.
local function SaveTokenBucket(key, deficit, updated, rate, now)
  SetState(key, Pack(kTokenBucketState, deficit, updated),
    CeilDiv(updated + CeilDiv(deficit, rate), 1000), now)
end
