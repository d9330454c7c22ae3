-- parse_check.lua: reads and validates one check's five arguments.
--
-- Argument layout of one check (all decimal integers except the algorithm):
--   algorithm   'fixed_window' | 'sliding_window' | 'sliding_log' | 'token_bucket' | 'gcra'
--   limit       units per period, [1, 2^32 - 1]
--   period_us   a whole number of ms in microseconds, [1000, 366 days]
--   capacity    Limit::Capacity(): the burst for token_bucket and gcra, else equal to limit
--   cost        units to record, [0, 2^32]; 0 is a peek
-- These are the bounds of ValidateLimit() and ValidateCost() in C++, checked again here because a
-- script must never act on input it does not understand (NaN compares false, so an unchecked
-- 'nan' limit would allow everything).

-- Returns (name, limit, period, capacity, cost) for the check whose arguments are
-- ARGV[base + 1 .. base + 5]; `index` (from 1) names the check in error messages, which are only
-- built when a check fails.
local function ParseCheck(base, index)
  local name = ARGV[base + 1]
  -- Compared with string literals rather than looked up in a table: Lua strings are interned, so
  -- each comparison is one pointer test, and no table is built per call.
  local rate_based = name == 'gcra' or name == 'token_bucket'
  if not rate_based and name ~= 'fixed_window' and name ~= 'sliding_window' and
      name ~= 'sliding_log' then
    Fail('check ' .. index .. ': unknown algorithm')
  end
  local limit = ParseInt(ARGV[base + 2], 1, kMaxLimit)
  if limit == nil then
    Fail('check ' .. index .. ': limit must be an integer in [1, 2^32-1]')
  end
  local period = ParseInt(ARGV[base + 3], 1000, kMaxPeriodUs)
  if period == nil or IDiv(period, 1000) * 1000 ~= period then
    Fail('check ' .. index .. ': period_us must be a whole number of ms in [1 ms, 366 days]')
  end
  local capacity = ParseInt(ARGV[base + 4], 1, kMaxLimit)
  if capacity == nil then
    Fail('check ' .. index .. ': capacity must be an integer in [1, 2^32-1]')
  end
  local cost = ParseInt(ARGV[base + 5], 0, kMaxCost)
  if cost == nil then
    Fail('check ' .. index .. ': cost must be an integer in [0, 2^32]')
  end
  -- Products of a quota and a period must stay below 2^50 so that every formula is exact. A
  -- product above 2^53 is rounded but stays above 2^50, so the comparisons are sound.
  if rate_based then
    if math.max(limit, capacity) * period > kMaxRateProduct then
      Fail('check ' .. index .. ': max(limit, burst) * period_us must be <= 2^50')
    end
  else
    if capacity ~= limit then
      Fail('check ' .. index .. ': capacity must equal limit for ' .. name)
    end
    if name == 'sliding_window' and limit * (period / 1000) > kMaxRateProduct then
      Fail('check ' .. index .. ': limit * period_ms must be <= 2^50')
    end
    if name == 'sliding_log' and limit > kMaxSlidingLogLimit then
      Fail('check ' .. index .. ': sliding_log limit must be <= 100000')
    end
  end
  return name, limit, period, capacity, cost
end

-- The start of every single-check script (check_<algorithm>.lua): validates the call's shape and
-- its one check, which must name `algorithm` (the script was chosen by it), and returns
-- (limit, period, capacity, cost). Everything is validated before the script reads or writes.
local function ParseSingleCheck(algorithm)
  if #KEYS ~= 1 or #ARGV ~= kArgvBase + 5 then
    Fail('expected 1 key and ' .. (kArgvBase + 5) .. ' arguments')
  end
  local name, limit, period, capacity, cost = ParseCheck(kArgvBase, 1)
  if name ~= algorithm then
    Fail('check 1: this script checks ' .. algorithm .. ' limits only')
  end
  return limit, period, capacity, cost
end
