-- gcra.lua: docs/algorithms.md, "gcra".
-- State: a hash {t = TAT whole microseconds, f = TAT fraction in 1/limit us}, with the theoretical
-- arrival time tat = t + f / limit and 0 <= f < limit.
--
-- The debt D(x) = (x_us - now) * limit + x_frac is never formed when it could be large: after
-- time steps back, x_us - now can be hours, and hours times a 2^32 limit is beyond 2^53. Writing
-- D(x) = dt * limit + f and B * P = bq * limit + br, every comparison and ceil() below is done on
-- the pair (dt, f), which is exact for any dt below 2^53.

local Gcra = {}

function Gcra.Load(key, key_index)
  local v = redis.call('HMGET', key, 't', 'f')
  return {
    tat_us = StateInt(v[1], key_index, 't'),
    tat_frac = StateInt(v[2], key_index, 'f'),
  }
end

function Gcra.Decide(lim, st, now, cost)
  local rate, burst, period = lim.limit, lim.capacity, lim.period
  local tat_us, tat_frac = st.tat_us, st.tat_frac
  if tat_frac >= rate then
    -- Written under a larger limit: carry the whole microseconds so that 0 <= frac < limit.
    tat_us = tat_us + IDiv(tat_frac, rate)
    tat_frac = IMod(tat_frac, rate)
  end
  if tat_us < now then
    tat_us, tat_frac = now, 0
  end
  local full = burst * period -- B * P <= 2^50 (checked with the arguments)
  local bq, br = IDiv(full, rate), IMod(full, rate)

  -- (B * P - D) div P, clamped at 0.
  local function Remaining(dt, frac)
    if dt > bq or (dt == bq and frac > br) then
      return 0
    end
    return IDiv(full - (dt * rate + frac), period) -- D <= B * P here, so exact
  end
  -- ceil(D / limit): when the TAT reaches now.
  local function ResetAfter(dt, frac)
    if frac > 0 then
      return dt + 1
    end
    return dt
  end

  local dt = tat_us - now
  if cost > burst then
    return {0, burst, Remaining(dt, tat_frac), ResetAfter(dt, tat_frac), -1}
  end
  -- new = tat + cost * T with T = period / limit, as q + r / limit.
  local increment = cost * period -- <= B * P
  local q, r = IDiv(increment, rate), IMod(increment, rate)
  local new_frac = tat_frac + r
  local new_dt = dt + q
  if new_frac >= rate then
    new_frac = new_frac - rate
    new_dt = new_dt + 1
  end
  -- Admit iff D(new) <= B * P. A peek is always allowed, even with a debt above B * P (after time
  -- stepped back, or under a smaller burst).
  if cost == 0 or new_dt < bq or (new_dt == bq and new_frac <= br) then
    if cost > 0 then
      st.tat_us = now + new_dt
      st.tat_frac = new_frac
      st.lim = lim
      st.dirty = true
    end
    return {1, burst, Remaining(new_dt, new_frac), ResetAfter(new_dt, new_frac), 0}
  end
  -- ceil((D(new) - B * P) / limit) = (new_dt - bq) + ceil((new_frac - br) / limit), and
  -- -limit < new_frac - br < limit.
  local retry_after = new_dt - bq
  if new_frac > br then
    retry_after = retry_after + 1
  end
  return {0, burst, Remaining(dt, tat_frac), ResetAfter(dt, tat_frac), retry_after}
end

function Gcra.Save(key, st, now)
  redis.call('HSET', key, 't', Int(st.tat_us), 'f', Int(st.tat_frac))
  -- The TAT, rounded up to the microsecond: now + reset_after.
  local expiry = st.tat_us
  if st.tat_frac > 0 then
    expiry = expiry + 1
  end
  SetExpiry(key, expiry, now)
end
