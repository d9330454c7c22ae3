-- gcra.lua: docs/algorithms.md, "gcra".
-- State: '<I8I8' = the TAT's whole microseconds and its fraction in 1/limit us, with the
-- theoretical arrival time tat = t + f / limit and 0 <= f < limit; no key = (0, 0). An earlier
-- version wrote 't:f' in decimal, which is still read.
--
-- The debt D(x) = (x_us - now) * limit + x_frac is never formed when it could be large: after
-- time steps back, x_us - now can be hours, and hours times a 2^32 limit is beyond 2^53. Writing
-- D(x) = dt * limit + f and B * P = bq * limit + br, every comparison and ceil() below is done on
-- the pair (dt, f), which is exact for any dt below 2^53.

local kGcraState = '<I8I8'
local kGcraStateBytes = 16

local function LoadGcra(key, key_index)
  local v = Call('GET', key)
  if not v then
    return 0, 0
  end
  if #v == kGcraStateBytes then
    local t, f = Unpack(kGcraState, v)
    if t > kMaxTimeUs or f > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return t, f
  end
  local t, f = Match(v, '^(%d+):(%d+)$')
  return StateInt(t, key_index), StateInt(f, key_index)
end

-- Decides `cost` at `now` against the TAT (tat_us, tat_frac). Returns allowed (1|0), remaining,
-- reset_after, retry_after and the TAT after the decision, which differs from the one passed in
-- only when the request was admitted with cost > 0.
local function DecideGcra(rate, burst, period, tat_us, tat_frac, now, cost)
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

  -- The TAT the decision reports on: the new one when admitted, else the current one.
  local dt = us - now
  local allowed, retry_after = 0, -1
  if cost <= burst then
    -- new = tat + cost * T with T = period / limit, as q + r / limit.
    local increment = cost * period -- <= B * P
    local q = IDiv(increment, rate)
    local new_frac = frac + (increment - q * rate)
    local new_dt = dt + q
    if new_frac >= rate then
      new_frac = new_frac - rate
      new_dt = new_dt + 1
    end
    -- Admit iff D(new) <= B * P. A peek is always allowed, even with a debt above B * P (after
    -- time stepped back, or under a smaller burst).
    if cost == 0 or new_dt < bq or (new_dt == bq and new_frac <= br) then
      allowed, retry_after = 1, 0
      dt, frac = new_dt, new_frac
      if cost > 0 then
        tat_us, tat_frac = now + new_dt, new_frac
      end
    else
      -- ceil((D(new) - B * P) / limit) = (new_dt - bq) + ceil((new_frac - br) / limit), and
      -- -limit < new_frac - br < limit.
      retry_after = new_dt - bq
      if new_frac > br then
        retry_after = retry_after + 1
      end
    end
  end
  -- remaining = (B * P - D) div P, clamped at 0; D <= B * P is tested on the pair first, so the
  -- product is formed only when it is at most B * P.
  local remaining = 0
  if dt < bq or (dt == bq and frac <= br) then
    remaining = IDiv(full - (dt * rate + frac), period)
  end
  -- reset_after = ceil(D / limit): when the TAT reaches now.
  local reset_after = dt
  if frac > 0 then
    reset_after = dt + 1
  end
  return allowed, remaining, reset_after, retry_after, tat_us, tat_frac
end

-- Expires at the TAT, rounded up to the microsecond: now + reset_after.
local function SaveGcra(key, tat_us, tat_frac, now)
  local expiry = tat_us
  if tat_frac > 0 then
    expiry = expiry + 1
  end
  SetState(key, Pack(kGcraState, tat_us, tat_frac), CeilDiv(expiry, 1000), now)
end
