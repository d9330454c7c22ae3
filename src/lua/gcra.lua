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
local kGcraStateBytes = 16

-- Returns the TAT (us, frac) and the lease record (nil for none).
local function LoadGcra(key, key_index)
  local v = Call('GET', key)
  if not v then
    return 0, 0, nil
  end
  if #v == kGcraStateBytes then
    local t, f = Unpack(kGcraState, v)
    if t > kMaxTimeUs or f > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return t, f, nil
  end
  local t, f = Match(v, '^(%d+):(%d+)$')
  if t == nil and #v > kGcraStateBytes then
    -- A record follows (as in token_bucket.lua, a binary state never matches the decimal form).
    t, f = Unpack(kGcraState, v)
    if t > kMaxTimeUs or f > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return t, f, ParseLeaseRecord(v, kGcraStateBytes, key_index)
  end
  return StateInt(t, key_index), StateInt(f, key_index), nil
end

-- (dt, frac) + units * T, with T = period / rate: the pair of x + units * T for x - now = (dt,
-- frac). units * period <= B * P <= 2^50.
local function GcraPlus(dt, frac, units, period, rate)
  local increment = units * period
  local q = IDiv(increment, rate)
  local new_frac = frac + (increment - q * rate)
  local new_dt = dt + q
  if new_frac >= rate then
    new_frac = new_frac - rate
    new_dt = new_dt + 1
  end
  return new_dt, new_frac
end

-- The floors of `leases` on the TAT (dt, frac) after now (docs/algorithms.md, "The lease
-- record"): returns the TAT raised by the ended leases' floors e_k + G_k * T, G(now), and the
-- time, after now, at which the last running lease's floor has passed.
local function GcraFloors(rate, burst, period, dt, frac, now, leases)
  local reset = 0
  local running = ReadLeases(leases, burst, now,
    function(ends, units)
      local increment = units * period
      local q = IDiv(increment, rate)
      local ahead = ends + q - now
      local r = increment - q * rate
      if ahead > dt or (ahead == dt and r > frac) then
        dt, frac = ahead, r
      end
    end,
    function(ends, units)
      local x = ends - now + CeilDiv(units * period, rate)
      if x > reset then
        reset = x
      end
    end)
  return dt, frac, running, reset
end

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
  -- reset_after are measured on), and (fdt, ffrac) with it too (what the decision is made on).
  local dt = us - now
  local fdt, ffrac, leases_reset = dt, frac, 0
  if leases ~= nil then
    local running
    dt, frac, running, leases_reset = GcraFloors(rate, burst, period, dt, frac, now, leases)
    fdt, ffrac = dt, frac
    local q, r = GcraPlus(0, 0, running, period, rate)
    if q > fdt or (q == fdt and r > ffrac) then
      fdt, ffrac = q, r
    end
  end
  -- The TAT `remaining` is computed on, and the one reset_after is (the stored one).
  local at_dt, at_frac, st_dt, st_frac = fdt, ffrac, dt, frac
  local allowed, retry_after = 0, -1
  if cost <= burst then
    -- new = tat + cost * T with T = period / limit, as q + r / limit (GcraPlus, inline: a call
    -- costs Redis about as much as a command).
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
        leases = PruneLeases(leases, now)
      end
    else
      -- The later of the wait on the TAT alone, ceil((D(new) - B * P) / limit) =
      -- (new_dt - bq) + ceil((new_frac - br) / limit) with -limit < new_frac - br < limit, and the
      -- waits on the running leases' floors.
      retry_after = 0
      local u_dt, u_frac = new_dt, new_frac
      if leases ~= nil then
        u_dt, u_frac = GcraPlus(dt, frac, cost, period, rate)
      end
      if u_dt > bq or (u_dt == bq and u_frac > br) then
        retry_after = u_dt - bq
        if u_frac > br then
          retry_after = retry_after + 1
        end
      end
      if leases ~= nil then
        local room = full - cost * period
        ReadLeases(leases, burst, now, function() end, function(ends, units)
          if units * period > room then
            local x = ends - now + CeilDiv(units * period - room, rate)
            if x > retry_after then
              retry_after = x
            end
          end
        end)
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

-- Expires at the TAT, rounded up to the microsecond, or when the last running lease's floor has
-- passed: now + reset_after. REQUIRES: `leases` pruned at `now`.
local function SaveGcra(key, tat_us, tat_frac, now, leases, rate, burst, period)
  local expiry = tat_us
  if tat_frac > 0 then
    expiry = expiry + 1
  end
  if leases ~= nil then
    ReadLeases(leases, burst, now, function() end, function(ends, units)
      local x = ends + CeilDiv(units * period, rate)
      if x > expiry then
        expiry = x
      end
    end)
  end
  SetState(key, PackWithRecord(tat_us, tat_frac, leases), CeilDiv(expiry, 1000), now)
end
