-- parse_check.lua: reads and validates one check's argument.
--
-- A check is one ARGV entry of exactly kCheckBytes, kCheckFormat (common.lua), little-endian:
--   algorithm   u8    kFixedWindow .. kGcra (the value of enum class Algorithm); kFixedWindow +
--                     kCountRejected for a fixed window counting rejected hits; + kRefund for a
--                     credit (never with kCountRejected)
--   limit       u32   units per period, [1, 2^32 - 1]
--   period_us   u64   a whole number of ms in microseconds, [1000, 366 days]
--   capacity    u32   Limit::Capacity(): the burst for token_bucket and gcra, else equal to limit
--   cost        u64   units to record (a credit: to give back), [0, 2^32]; 0 is a peek
-- These are the bounds of ValidateLimit() and ValidateCost() in C++, checked again here because a
-- script must never act on input it does not understand. Any string of the right length unpacks
-- to integers (there is no NaN, sign or exponent to refuse), and every field is then bounded, so a
-- malformed call is refused before anything is read or written. (A u64 above 2^53 unpacks
-- rounded, but stays far above every bound.)

-- Returns (algorithm, limit, period, capacity, cost, counting, refund) for `check`, the argument
-- of check `index` (from 1, for error messages, which are only built when a check fails);
-- `counting` is true for a fixed window counting rejected hits, `refund` for a credit. With
-- `expected`, the check must be of that algorithm and not a credit: a single-check function was
-- chosen by it, and only check_all decides credits.
local function ParseCheck(check, index, expected)
  if #check ~= kCheckBytes then
    Fail('check ' .. index .. ': expected ' .. kCheckBytes .. ' bytes, got ' .. #check)
  end
  local algorithm, limit, period, capacity, cost = Unpack(kCheckFormat, check)
  local counting, refund = false, false
  if algorithm >= kCountRejected then
    algorithm, counting = algorithm - kCountRejected, true
  end
  if algorithm >= kRefund then
    algorithm, refund = algorithm - kRefund, true
  end
  -- A credit gives units back; counting rejected hits records charges that were refused. The two
  -- together have no meaning (docs/algorithms.md, "Credits").
  if counting and refund then
    Fail('check ' .. index .. ': a credit does not count rejected hits')
  end
  if counting and algorithm ~= kFixedWindow then
    Fail('check ' .. index .. ': only a fixed_window limit counts rejected hits')
  end
  if algorithm > kGcra then
    Fail('check ' .. index .. ': unknown algorithm ' .. algorithm)
  end
  if expected ~= nil and refund then
    -- A credit is decided by check_all only (RedisStore sends a lone credit there too), so that
    -- the single-check functions, the cheapest path, carry no credit code.
    Fail('check ' .. index .. ': a credit goes through check_all, not this script')
  end
  if expected ~= nil and algorithm ~= expected then
    local names = {'fixed_window', 'sliding_window', 'sliding_log', 'token_bucket', 'gcra'}
    Fail('check ' .. index .. ': this script checks ' .. names[expected + 1] .. ' limits only')
  end
  if limit < 1 then
    Fail('check ' .. index .. ': limit must be an integer in [1, 2^32-1]')
  end
  if period < 1000 or period > kMaxPeriodUs or period % 1000 ~= 0 then
    Fail('check ' .. index .. ': period_us must be a whole number of ms in [1 ms, 366 days]')
  end
  if capacity < 1 then
    Fail('check ' .. index .. ': capacity must be an integer in [1, 2^32-1]')
  end
  if cost > kMaxCost then
    Fail('check ' .. index .. ': cost must be an integer in [0, 2^32]')
  end
  -- Products of a quota and a period must stay below 2^50 so that every formula is exact. A
  -- product above 2^53 is rounded but stays above 2^50, so the comparisons are sound.
  if algorithm >= kTokenBucket then
    if limit * period > kMaxRateProduct or capacity * period > kMaxRateProduct then
      Fail('check ' .. index .. ': max(limit, burst) * period_us must be <= 2^50')
    end
  else
    if capacity ~= limit then
      Fail('check ' .. index .. ': capacity must equal limit for this algorithm')
    end
    if algorithm == kSlidingWindow and limit * (period / 1000) > kMaxRateProduct then
      Fail('check ' .. index .. ': limit * period_ms must be <= 2^50')
    end
    if algorithm == kSlidingLog and limit > kMaxSlidingLogLimit then
      Fail('check ' .. index .. ': sliding_log limit must be <= 100000')
    end
  end
  return algorithm, limit, period, capacity, cost, counting, refund
end
