-- token_bucket.lua: docs/algorithms.md, "token_bucket" and "The lease record".
-- State: '<I8I8' = the deficit (tokens missing from a full bucket, scaled by the period in us)
-- and when it was true (us), then the lease record when leases were granted on the key
-- (lease_record.lua); no key = (0, 0), a full bucket. An earlier version wrote 'd:u' in decimal,
-- which is still read.

local kTokenBucketState = '<I8I8'

-- Returns deficit, updated and the lease record (nil for none).
local LoadTokenBucket = LoadPairState

-- Decides `cost` at `now` against (deficit, updated) and the lease record `leases` (nil: none).
-- Returns allowed (1|0), remaining, reset_after, retry_after and the state after the decision,
-- which differs from the one passed in only when the request was admitted with cost > 0 (the
-- record is then pruned at `now`, as the write will store it).
local function DecideTokenBucket(rate, burst, period, deficit, updated, now, cost, leases)
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
  -- With leases: d is raised by the ended leases' floors, and the decision is made on `floored`,
  -- at least G(now) tokens missing; waits and reset_after are measured on d, and on the running
  -- leases' floors.
  local floored, leases_reset, leases_retry = d, 0, 0
  if leases ~= nil then
    local room, running = nil, 0
    if cost <= burst then
      room = full - cost * period
    end
    d, running, leases_reset, leases_retry =
      LeaseRecord().BucketFloors(rate, burst, period, d, updated, t, now, leases, room)
    floored = d
    if running * period > floored then
      floored = running * period
    end
  end
  -- The deficit `remaining` is computed on, and the one reset_after is (the stored one).
  local at, stored = floored, d
  local allowed, retry_after = 0, -1
  if cost <= burst then
    local needed = floored + cost * period
    -- A peek is always allowed, even when a state written under a smaller burst is over it.
    if cost == 0 or needed <= full then
      allowed, retry_after = 1, 0
      at = needed
      if cost > 0 then
        deficit, updated, stored = needed, t, needed
        if leases ~= nil then
          leases = LeaseRecord().Prune(leases, now)
        end
      end
    else
      -- The later of the wait for the refill alone and the waits for the running leases'
      -- floors to come down.
      retry_after = leases_retry
      if d + cost * period > full then
        local wait = lag + CeilDiv(d + cost * period - full, rate)
        if wait > retry_after then
          retry_after = wait
        end
      end
    end
  end
  local remaining = 0
  if full > at then
    remaining = IDiv(full - at, period)
  end
  -- Time until the bucket is full again and every lease's floor has refilled.
  local reset_after = 0
  if stored > 0 then
    reset_after = lag + CeilDiv(stored, rate)
  end
  if leases_reset > reset_after then
    reset_after = leases_reset
  end
  return allowed, remaining, reset_after, retry_after, deficit, updated, leases
end

-- Returns t = max(now, updated), the deficit a check at `now` decides on (refilled to t, then
-- raised by every floor of the lease record `leases`, nil for none: DecideTokenBucket's
-- `floored`) and G(now), the units of the running leases: what a credit or a lease refund takes
-- units back from.
local function FlooredTokenBucket(rate, burst, period, deficit, updated, now, leases)
  local t = now
  if updated > t then
    t = updated
  end
  local d = deficit
  if d > 0 then
    if t - updated >= CeilDiv(d, rate) then
      d = 0
    else
      d = d - (t - updated) * rate
    end
  end
  local running = 0
  if leases ~= nil then
    d, running = LeaseRecord().BucketFloors(rate, burst, period, d, updated, t, now, leases, nil)
    if running * period > d then
      d = running * period
    end
  end
  return t, d, running
end

-- Gives back `units` charged earlier (docs/algorithms.md, "Credits") at `now` against (deficit,
-- updated) and the lease record `leases`: at most a full bucket (burst) of tokens goes back, from
-- the deficit a check would decide on now, never below 0. Where that leaves the deficit below the
-- running leases' floor G(now) * P, the units it falls short are taken off the running leases'
-- entries, the earliest ending first (a credited unit was spent, from a lease or not), or the
-- next read would floor the credit away. Returns allowed (always 1), remaining, reset_after,
-- retry_after (0), which are a peek of the state after the credit, that state (the record pruned
-- at `now` when it changed), and whether it changed (only then is it written, with the usual
-- expiry).
local function CreditTokenBucket(rate, burst, period, deficit, updated, now, units, leases)
  local t, floored, running = FlooredTokenBucket(rate, burst, period, deficit, updated, now, leases)
  local u = units
  if u > burst then
    u = burst
  end
  -- u * period <= B * P <= 2^50.
  local after = floored - u * period
  if after < 0 then
    after = 0
  end
  local changed = false
  if after < floored then
    deficit, updated, changed = after, t, true
    if leases ~= nil then
      local short = 0
      if after < running * period then
        short = CeilDiv(running * period - after, period)
      end
      leases = LeaseRecord().TakeFromRunning(leases, short, now)
    end
  end
  local _, remaining, reset_after =
    DecideTokenBucket(rate, burst, period, deficit, updated, now, 0, leases)
  return 1, remaining, reset_after, 0, deficit, updated, leases, changed
end

-- The bucket is full again ceil(deficit / rate) after `updated`, and each running lease's floor
-- has refilled ceil(G_k * P / rate) after its end: the latest of these, now + reset_after.
-- REQUIRES: `leases` pruned at `now`.
local function SaveTokenBucket(key, deficit, updated, rate, now, leases, burst, period)
  local expiry = updated + CeilDiv(deficit, rate)
  local value
  if leases == nil then
    value = Pack(kTokenBucketState, deficit, updated)
  else
    local R = LeaseRecord()
    local _, _, reset = R.BucketFloors(rate, burst, period, 0, updated, updated, now, leases, nil)
    if now + reset > expiry then
      expiry = now + reset
    end
    value = R.Pack(deficit, updated, leases)
  end
  SetState(key, value, CeilDiv(expiry, 1000), now)
end
