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

local kAlgorithms = {
  fixed_window = FixedWindow,
  sliding_window = SlidingWindow,
  sliding_log = SlidingLog,
  token_bucket = TokenBucket,
  gcra = Gcra,
}

-- Returns (lim, cost) for the check whose arguments are ARGV[base + 1 .. base + 5]; `index` (from
-- 1) names the check in error messages. lim = {name, impl, limit, period, capacity}.
local function ParseCheck(base, index)
  local where = 'check ' .. index .. ': '
  local name = ARGV[base + 1]
  local impl = kAlgorithms[name]
  if impl == nil then
    Fail(where .. 'unknown algorithm')
  end
  local limit = ParseInt(ARGV[base + 2], 1, kMaxLimit)
  if limit == nil then
    Fail(where .. 'limit must be an integer in [1, 2^32-1]')
  end
  local period = ParseInt(ARGV[base + 3], 1000, kMaxPeriodUs)
  if period == nil or IMod(period, 1000) ~= 0 then
    Fail(where .. 'period_us must be a whole number of ms in [1 ms, 366 days]')
  end
  local capacity = ParseInt(ARGV[base + 4], 1, kMaxLimit)
  if capacity == nil then
    Fail(where .. 'capacity must be an integer in [1, 2^32-1]')
  end
  local cost = ParseInt(ARGV[base + 5], 0, kMaxCost)
  if cost == nil then
    Fail(where .. 'cost must be an integer in [0, 2^32]')
  end
  -- Products of a quota and a period must stay below 2^50 so that every formula is exact. A
  -- product above 2^53 is rounded but stays above 2^50, so the comparisons are sound.
  if name == 'token_bucket' or name == 'gcra' then
    if math.max(limit, capacity) * period > kMaxRateProduct then
      Fail(where .. 'max(limit, burst) * period_us must be <= 2^50')
    end
  else
    if capacity ~= limit then
      Fail(where .. 'capacity must equal limit for ' .. name)
    end
    if name == 'sliding_window' and limit * (period / 1000) > kMaxRateProduct then
      Fail(where .. 'limit * period_ms must be <= 2^50')
    end
    if name == 'sliding_log' and limit > kMaxSlidingLogLimit then
      Fail(where .. 'sliding_log limit must be <= 100000')
    end
  end
  return {name = name, impl = impl, limit = limit, period = period, capacity = capacity}, cost
end
