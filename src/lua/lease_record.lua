-- lease_record.lua: the lease record of token bucket and GCRA states (docs/algorithms.md, "The
-- lease record"; docs/redis.md, "State encoding").
--
-- Stored after a state's two fields: up to kMaxLeaseEntries pairs '<I8I8' (ends_us, granted),
-- sorted by ends_us. A state without a record is the 16 bytes it always was, so every key that no
-- lease was granted on reads and is written exactly as before. In Lua a record is a flat list
-- {ends_1, granted_1, ends_2, granted_2, ...}, or nil for none.
--
-- The functions are built on first use, by LeaseRecord(): the whole body of an EVAL script runs on
-- every call, creating each top-level function anew, and nearly every call meets a state without a
-- record, which needs none of them. (In the function library they are built once.)

local kMaxLeaseEntries = 32

local lease_record_functions = nil

-- (The functions below spell out the entry's format, '<I8I8' of 16 bytes, and the bound of 32:
-- every value a closure captures from the script's top level costs each EVAL call a walk of its
-- open upvalues.)
local function LeaseRecord()
  if lease_record_functions ~= nil then
    return lease_record_functions
  end
  local R = {}

  -- Returns the record stored after the first `head` bytes of `v` (#v > head), or raises
  -- SLUICE_BADSTATE: not whole entries, too many, a field beyond 2^53 - 1, an empty lease or
  -- entries out of order.
  function R.Parse(v, head, key_index)
    local n = (#v - head) / 16
    if n ~= Floor(n) or n > 32 then
      FailState(key_index, 'stored state')
    end
    local record = {}
    local previous = 0
    for i = 1, n do
      local ends, granted = Unpack('<I8I8', v, head + 16 * (i - 1) + 1)
      if ends > kMaxTimeUs or granted > kMaxTimeUs or granted < 1 or ends < previous then
        FailState(key_index, 'stored lease record')
      end
      record[2 * i - 1], record[2 * i] = ends, granted
      previous = ends
    end
    return record
  end

  -- The stored value of a state's two fields and its record (not nil).
  function R.Pack(a, b, record)
    return Pack('<I8I8' .. string.rep('I8I8', #record / 2), a, b, unpack(record))
  end

  -- Returns the entries of `record` that have not ended at `now` (ends_us > now), or nil for
  -- none: what every write keeps.
  function R.Prune(record, now)
    if record == nil then
      return nil
    end
    local kept = {}
    for i = 1, #record, 2 do
      if record[i] > now then
        kept[#kept + 1] = record[i]
        kept[#kept + 1] = record[i + 1]
      end
    end
    if #kept == 0 then
      return nil
    end
    return kept
  end

  -- Returns a new record: `record` with `units` taken off its running entries (ends_us > now),
  -- the earliest ending first (of equal ends, the first granted), an entry left with 0 dropped,
  -- and pruned at `now` (nil when empty): the units of a credit that the running leases' floor
  -- would otherwise take back (docs/algorithms.md, "Credits"). Holders spend their earliest
  -- ending units first, so those are the likeliest spent.
  function R.TakeFromRunning(record, units, now)
    local kept = {}
    for i = 1, #record, 2 do
      local ends, granted = record[i], record[i + 1]
      if ends > now then
        if units > 0 then
          local taken = units
          if taken > granted then
            taken = granted
          end
          granted = granted - taken
          units = units - taken
        end
        if granted > 0 then
          kept[#kept + 1] = ends
          kept[#kept + 1] = granted
        end
      end
    end
    if #kept == 0 then
      return nil
    end
    return kept
  end

  -- The record's floors on a token bucket's deficit `d`, refilled to `t` from `updated`. Visits
  -- the entries from the last, with `units` = min(burst, the units of an entry and every later
  -- one): G_k for the first of equal ends (the others' terms are dominated by it). Returns
  --   d raised by the floors of the entries that have ended (each refilling from its end),
  --   G(now), the units of the first running entry,
  --   the time after now at which the last running entry's floor has refilled, and
  --   with `room` = (B - c) * P (nil: none), the time after now at which every running entry's
  --   floor has come down to `room`.
  function R.BucketFloors(rate, burst, period, d, updated, t, now, record, room)
    local units, running, reset, retry = 0, 0, 0, 0
    for i = #record - 1, 1, -2 do
      local ends = record[i]
      units = units + record[i + 1]
      if units > burst then
        units = burst
      end
      local floor = units * period -- <= B * P <= 2^50
      if ends <= now then
        local from = ends
        if updated > from then
          from = updated
        end
        -- Refill the floor from its end: max(0, floor - (t - from) * rate), without a product
        -- beyond 2^53.
        if t - from < CeilDiv(floor, rate) then
          floor = floor - (t - from) * rate
          if floor > d then
            d = floor
          end
        end
      else
        running = units
        local from = ends
        if t > from then
          from = t
        end
        local x = from + CeilDiv(floor, rate) - now
        if x > reset then
          reset = x
        end
        if room ~= nil and floor > room then
          x = from + CeilDiv(floor - room, rate) - now
          if x > retry then
            retry = x
          end
        end
      end
    end
    return d, running, reset, retry
  end

  -- The record's floors on a GCRA TAT (dt, frac) after now, as BucketFloors(): returns the TAT
  -- raised by the ended entries' floors e_k + G_k * T, G(now), and the two times after now.
  function R.GcraFloors(rate, burst, period, dt, frac, now, record, room)
    local units, running, reset, retry = 0, 0, 0, 0
    for i = #record - 1, 1, -2 do
      local ends = record[i]
      units = units + record[i + 1]
      if units > burst then
        units = burst
      end
      local floor = units * period -- <= B * P <= 2^50
      if ends <= now then
        local q = IDiv(floor, rate)
        local ahead = ends + q - now
        local r = floor - q * rate
        if ahead > dt or (ahead == dt and r > frac) then
          dt, frac = ahead, r
        end
      else
        running = units
        local x = ends - now + CeilDiv(floor, rate)
        if x > reset then
          reset = x
        end
        if room ~= nil and floor > room then
          x = ends - now + CeilDiv(floor - room, rate)
          if x > retry then
            retry = x
          end
        end
      end
    end
    return dt, frac, running, reset, retry
  end

  lease_record_functions = R
  return R
end

-- Reads a token bucket's or GCRA's state: its two fields ('<I8I8', each below 2^53) and its lease
-- record (nil for none); no key reads as (0, 0). The decimal 'a:b' an earlier version wrote is
-- still read (it is never 16 bytes: one of its fields alone has 16 digits), and a binary state with
-- a record never matches that form (the record's first ends_us, below 2^53, has a high byte below
-- ' ').
local function LoadPairState(key, key_index)
  local v = Call('GET', key)
  if not v then
    return 0, 0, nil
  end
  if #v == 16 then
    local a, b = Unpack('<I8I8', v)
    if a > kMaxTimeUs or b > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return a, b, nil
  end
  local a, b = Match(v, '^(%d+):(%d+)$')
  if a == nil and #v > 16 then
    a, b = Unpack('<I8I8', v)
    if a > kMaxTimeUs or b > kMaxTimeUs then
      FailState(key_index, 'stored state')
    end
    return a, b, LeaseRecord().Parse(v, 16, key_index)
  end
  return StateInt(a, key_index), StateInt(b, key_index), nil
end
