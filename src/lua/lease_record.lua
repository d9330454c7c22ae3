-- lease_record.lua: the lease record of token bucket and GCRA states (docs/algorithms.md, "The
-- lease record"; docs/redis.md, "State encoding").
--
-- Stored after a state's two fields: up to kMaxLeaseEntries pairs '<I8I8' (ends_us, granted),
-- sorted by ends_us. A state without a record is the 16 bytes it always was, so every key that no
-- lease was granted on reads and is written exactly as before. In Lua a record is a flat list
-- {ends_1, granted_1, ends_2, granted_2, ...}, or nil for none.

local kMaxLeaseEntries = 32
local kLeaseEntryFormat = '<I8I8'
local kLeaseEntryBytes = 16

-- Returns the record stored after the first `head` bytes of `v` (#v > head), or raises
-- SLUICE_BADSTATE: not whole entries, too many, a field beyond 2^53 - 1, an empty lease or entries
-- out of order.
local function ParseLeaseRecord(v, head, key_index)
  local n = (#v - head) / kLeaseEntryBytes
  if n ~= Floor(n) or n > kMaxLeaseEntries then
    FailState(key_index, 'stored state')
  end
  local record = {}
  local previous = 0
  for i = 1, n do
    local ends, granted = Unpack(kLeaseEntryFormat, v, head + kLeaseEntryBytes * (i - 1) + 1)
    if ends > kMaxTimeUs or granted > kMaxTimeUs or granted < 1 or ends < previous then
      FailState(key_index, 'stored lease record')
    end
    record[2 * i - 1], record[2 * i] = ends, granted
    previous = ends
  end
  return record
end

-- The stored value of a state's two fields and its record.
local function PackWithRecord(a, b, record)
  if record == nil then
    return Pack('<I8I8', a, b)
  end
  return Pack('<I8I8' .. string.rep('I8I8', #record / 2), a, b, unpack(record))
end

-- Returns the entries of `record` that have not ended at `now` (ends_us > now), or nil for none:
-- what every write keeps.
local function PruneLeases(record, now)
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

-- Returns how many entries of `record` have not ended at `now`.
local function RunningLeases(record, now)
  local n = 0
  if record ~= nil then
    for i = 1, #record, 2 do
      if record[i] > now then
        n = n + 1
      end
    end
  end
  return n
end

-- Returns a new record: `record` with (ends, units) after every entry ending at or before `ends`.
local function InsertLease(record, ends, units)
  local out = {}
  local placed = false
  if record ~= nil then
    for i = 1, #record, 2 do
      if not placed and record[i] > ends then
        out[#out + 1] = ends
        out[#out + 1] = units
        placed = true
      end
      out[#out + 1] = record[i]
      out[#out + 1] = record[i + 1]
    end
  end
  if not placed then
    out[#out + 1] = ends
    out[#out + 1] = units
  end
  return out
end

-- Returns the index in `record` of the entry (ends, granted), or nil.
local function FindLease(record, ends, granted)
  if record ~= nil then
    for i = 1, #record, 2 do
      if record[i] == ends and record[i + 1] == granted then
        return i
      end
    end
  end
  return nil
end

-- Returns a new record: `record` with `units` fewer in the entry at index `at` (dropped at 0),
-- pruned at `now` (nil when empty).
local function KeepLeaseRest(record, at, units, now)
  local out = {}
  for i = 1, #record, 2 do
    local left = record[i + 1]
    if i == at then
      left = left - units
    end
    if left > 0 then
      out[#out + 1] = record[i]
      out[#out + 1] = left
    end
  end
  return PruneLeases(out, now)
end

-- The reading of a record at `now` for a state whose capacity is `burst` (docs/algorithms.md):
-- calls ended(ends, units) for each entry that has ended and running(ends, units) for each that
-- has not, the last first, where `units` = min(burst, the units of it and every later entry),
-- which is G_k for the first of equal ends (the others' terms are dominated by it); returns G(now),
-- the units of the first running entry.
local function ReadLeases(record, burst, now, ended, running)
  local units = 0
  local live = 0
  for i = #record - 1, 1, -2 do
    units = units + record[i + 1]
    if units > burst then
      units = burst
    end
    if record[i] <= now then
      ended(record[i], units)
    else
      running(record[i], units)
      live = units
    end
  end
  return live
end
