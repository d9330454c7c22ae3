-- gcra.lua: docs/algorithms.md, "gcra" and "The lease record".
-- State: '<I8I8' = the TAT's whole microseconds and its fraction in 1/limit us, with the
-- theoretical arrival time tat = t + f / limit and 0 <= f < limit, then the lease record when
-- leases were granted on the key (lease_record.lua); no key = (0, 0). An earlier version wrote
-- 't:f' in decimal, which is still read.
--
-- The debt D(x) = (x_us - now) * limit + x_frac is never formed when it could be large: after
-- time steps back, x_us - now can be hours, and hours times a 2^32 limit is beyond 2^53. Writing
-- D(x) = dt * limit + f and B * P = bq * limit + br, every comparison and ceil() below is done on
-- the pair (dt, f), which is exact for any dt below 2^53.

local kGcraState = '<I8I8'

-- Returns the TAT (us, frac) and the lease record (nil for none).
local LoadGcra = LoadPairState

-- Decides `cost` at `now` against the TAT (tat_us, tat_frac) and the lease record `leases` (nil:
-- none). Returns allowed (1|0), remaining, reset_after, retry_after and the state after the
-- decision, which differs from the one passed in only when the request was admitted with
-- cost > 0 (the record is then pruned at `now`).
local function DecideGcra(rate, burst, period, tat_us, tat_frac, now, cost, leases)
  local us, frac = tat_us, tat_frac
  if frac >= rate then
    -- Written under a larger limit: carry the whole microseconds so that 0 <= frac < limit.
    local carry = IDiv(frac, rate)
    us = us + carry
    frac = frac - carry * rate
  end
  if us < now then
    us, frac = now, 0
  end
  local full = burst * period -- B * P <= 2^50 (checked with the arguments)
  local bq = IDiv(full, rate)
  local br = full - bq * rate

  -- The TAT after now: (dt, frac) with every floor but the running leases' (what waits and
  -- reset_after are measured on), and (fdt, ffrac) with theirs too (what the decision is made
  -- on): now + G(now) * T.
  local dt = us - now
  local fdt, ffrac, leases_reset, leases_retry = dt, frac, 0, 0
  if leases ~= nil then
    local room, running = nil, 0
    if cost <= burst then
      room = full - cost * period
    end
    dt, frac, running, leases_reset, leases_retry =
      LeaseRecord().GcraFloors(rate, burst, period, dt, frac, now, leases, room)
    fdt, ffrac = dt, frac
    local floor = running * period
    local q = IDiv(floor, rate)
    local r = floor - q * rate
    if q > fdt or (q == fdt and r > ffrac) then
      fdt, ffrac = q, r
    end
  end
  -- The TAT `remaining` is computed on, and the one reset_after is (the stored one).
  local at_dt, at_frac, st_dt, st_frac = fdt, ffrac, dt, frac
  local allowed, retry_after = 0, -1
  if cost <= burst then
    -- new = tat + cost * T with T = period / limit, as q + r / limit.
    local increment = cost * period -- <= B * P
    local q = IDiv(increment, rate)
    local new_frac = ffrac + (increment - q * rate)
    local new_dt = fdt + q
    if new_frac >= rate then
      new_frac = new_frac - rate
      new_dt = new_dt + 1
    end
    -- Admit iff D(new) <= B * P. A peek is always allowed, even with a debt above B * P (after
    -- time stepped back, or under a smaller burst).
    if cost == 0 or new_dt < bq or (new_dt == bq and new_frac <= br) then
      allowed, retry_after = 1, 0
      at_dt, at_frac = new_dt, new_frac
      if cost > 0 then
        tat_us, tat_frac = now + new_dt, new_frac
        st_dt, st_frac = new_dt, new_frac
        if leases ~= nil then
          leases = LeaseRecord().Prune(leases, now)
        end
      end
    else
      -- The later of the waits for the running leases' floors and the wait on the TAT alone,
      -- ceil((D(new) - B * P) / limit) = (new_dt - bq) + ceil((new_frac - br) / limit) with
      -- -limit < new_frac - br < limit, `new` computed from the TAT without the running floor.
      retry_after = leases_retry
      if leases ~= nil then
        new_frac = frac + (increment - q * rate)
        new_dt = dt + q
        if new_frac >= rate then
          new_frac = new_frac - rate
          new_dt = new_dt + 1
        end
      end
      if new_dt > bq or (new_dt == bq and new_frac > br) then
        local wait = new_dt - bq
        if new_frac > br then
          wait = wait + 1
        end
        if wait > retry_after then
          retry_after = wait
        end
      end
    end
  end
  -- remaining = (B * P - D) div P, clamped at 0; D <= B * P is tested on the pair first, so the
  -- product is formed only when it is at most B * P.
  local remaining = 0
  if at_dt < bq or (at_dt == bq and at_frac <= br) then
    remaining = IDiv(full - (at_dt * rate + at_frac), period)
  end
  -- reset_after = ceil(D / limit): when the TAT reaches now, or later a running lease's floor.
  local reset_after = st_dt
  if st_frac > 0 then
    reset_after = st_dt + 1
  end
  if leases_reset > reset_after then
    reset_after = leases_reset
  end
  return allowed, remaining, reset_after, retry_after, tat_us, tat_frac, leases
end

-- Returns the TAT a check at `now` decides on, as (dt, frac) after now: the stored TAT carried,
-- clamped at now and raised by every floor of the lease record `leases` (nil for none), as
-- DecideGcra's (fdt, ffrac); and G(now), the units of the running leases. What a credit or a lease
-- refund takes units back from.
local function FlooredGcra(rate, burst, period, tat_us, tat_frac, now, leases)
  local us, frac = tat_us, tat_frac
  if frac >= rate then
    local carry = IDiv(frac, rate)
    us = us + carry
    frac = frac - carry * rate
  end
  if us < now then
    us, frac = now, 0
  end
  local dt, running = us - now, 0
  if leases ~= nil then
    dt, frac, running = LeaseRecord().GcraFloors(rate, burst, period, dt, frac, now, leases, nil)
    local floor = running * period
    local q = IDiv(floor, rate)
    local r = floor - q * rate
    if q > dt or (q == dt and r > frac) then
      dt, frac = q, r
    end
  end
  return dt, frac, running
end

-- Gives back `units` charged earlier (docs/algorithms.md, "Credits") at `now` against the TAT
-- (tat_us, tat_frac) and the lease record `leases`, as CreditTokenBucket on the debt of the TAT a
-- check would decide on: D' = max(0, D - min(units, burst) * P), the units D' falls short of the
-- running leases' floor taken off their entries, and tat' = now + D' / limit as a pair. A debt
-- above 2 * B * P (only after a backward time step) is never formed: the credit is then the pair
-- tat - min(units, burst) * T (borrowing a microsecond when the fraction is below the
-- increment's), which cannot reach the floor (at most B * P). Returns allowed (always 1),
-- remaining, reset_after, retry_after (0), which are a peek of the state after the credit, that
-- state (the record pruned at `now` when it changed), and whether it changed (only then is it
-- written, with the usual expiry).
local function CreditGcra(rate, burst, period, tat_us, tat_frac, now, units, leases)
  local fdt, ffrac, running = FlooredGcra(rate, burst, period, tat_us, tat_frac, now, leases)
  local u = units
  if u > burst then
    u = burst
  end
  local increment = u * period -- <= B * P <= 2^50
  local dt, frac
  local short = 0
  if fdt > 2 * IDiv(burst * period, rate) + 1 then
    local q = IDiv(increment, rate)
    dt, frac = fdt - q, ffrac - (increment - q * rate)
    if frac < 0 then
      frac = frac + rate
      dt = dt - 1
    end
  else
    -- D <= 2 * B * P + 2 * limit < 2^52: exact.
    local after = fdt * rate + ffrac - increment
    if after < 0 then
      after = 0
    end
    if after < running * period then
      short = CeilDiv(running * period - after, period)
    end
    dt = IDiv(after, rate)
    frac = after - dt * rate
  end
  local changed = false
  if dt < fdt or (dt == fdt and frac < ffrac) then
    tat_us, tat_frac, changed = now + dt, frac, true
    if leases ~= nil then
      leases = LeaseRecord().TakeFromRunning(leases, short, now)
    end
  end
  local _, remaining, reset_after =
    DecideGcra(rate, burst, period, tat_us, tat_frac, now, 0, leases)
  return 1, remaining, reset_after, 0, tat_us, tat_frac, leases, changed
end

-- Expires at the TAT, rounded up to the microsecond, or when the last running lease's floor has
-- passed: now + reset_after. REQUIRES: `leases` pruned at `now`.
local function SaveGcra(key, tat_us, tat_frac, now, leases, rate, burst, period)
  local expiry = tat_us
  if tat_frac > 0 then
    expiry = expiry + 1
  end
  local value
  if leases == nil then
    value = Pack(kGcraState, tat_us, tat_frac)
  else
    local R = LeaseRecord()
    local _, _, _, reset = R.GcraFloors(rate, burst, period, 0, 0, now, leases, nil)
    if now + reset > expiry then
      expiry = now + reset
    end
    value = R.Pack(tat_us, tat_frac, leases)
  end
  SetState(key, value, CeilDiv(expiry, 1000), now)
end
