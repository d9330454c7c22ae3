-- common.lua: constants, exact integer helpers and argument parsing shared by every script.
--
-- Every number in sluice's state is an integer below 2^53, which Lua's doubles hold exactly
-- (docs/algorithms.md, "Exact arithmetic"). Two things would still lose exactness, and the helpers
-- here avoid both: a division whose double quotient rounds across an integer (IDiv corrects it),
-- and passing a number to redis.call, which formats it with '%.14g' and so drops digits above
-- 10^14 (numbers are formatted with '%d' instead).
--
-- Cost: Redis runs a script's whole body on every EVALSHA, and each `local function` below is a
-- closure created per call, so this piece keeps to the few helpers every script needs. Scripts
-- use multiple return values and locals rather than tables wherever one call's data fits in a few
-- numbers (docs/redis.md, "Cost per call").

local kMaxLimit = 4294967295 -- 2^32 - 1
local kMaxCost = 4294967296 -- 2^32
local kMaxPeriodUs = 31622400000000 -- 366 days
local kMaxSlidingLogLimit = 100000
local kMaxRateProduct = 1125899906842624 -- 2^50
local kMaxTimeUs = 9007199254740991 -- 2^53 - 1: the largest exact integer, bounds stored values
local kMaxNowUs = 4503599627370495 -- 2^52 - 1: docs/algorithms.md bounds `now` (year 2112)
local kMaxChecks = 64 -- checks per check_all call, so one call's work stays bounded

-- Raises an error reply. Scripts validate every argument before their first write, so raising
-- here leaves no partial state behind (a Redis script is isolated, not rolled back).
local function Fail(message)
  error({err = 'SLUICE_BADARG ' .. message})
end

-- Raised when a stored state cannot be parsed: a key of ours was written by someone else.
local function FailState(key_index, what)
  error({err = 'SLUICE_BADSTATE key ' .. key_index .. ': ' .. what .. ' is not an integer'})
end

-- floor(a / b) for integers 0 <= a < 2^53 and 0 < b < 2^53.
local function IDiv(a, b)
  local q = math.floor(a / b)
  -- The double quotient may round up to the next integer (or, in principle, down): step back to
  -- the exact floor. Both products stay below 2^53 + b, so they are exact for our operands.
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

-- ceil(a / b) for integers 0 <= a < 2^53 and 0 < b.
local function CeilDiv(a, b)
  local q = IDiv(a, b)
  if q * b < a then
    q = q + 1
  end
  return q
end

-- Parses a decimal integer in [lo, hi], or returns nil. Only digits are accepted: this refuses
-- '', ' 1', '+1', '-1', '1.5', '1e3', '0x10', 'nan' and 'inf', all of which tonumber would take
-- or turn into a non-integer. Sixteen digits are enough for every bound (all are below 2^53), and
-- a longer string cannot round into range.
local function ParseInt(text, lo, hi)
  if type(text) ~= 'string' or #text == 0 or #text > 16 or not string.find(text, '^%d+$') then
    return nil
  end
  local x = tonumber(text)
  if x == nil or x ~= x or x < lo or x > hi then
    return nil
  end
  return x
end

-- A stored state is one string of decimal integers joined by ':' (docs/redis.md, "State
-- encoding"); its fields are read with string.match and a pattern of '(%d+)' captures, so each is
-- digits only, and these checks finish the job: a capture that is missing (the value has another
-- shape) or beyond 2^53 - 1 (tonumber of 17 or more digits) is refused.
local function StateInt(text, key_index)
  local x = tonumber(text)
  if x == nil or x > kMaxTimeUs then
    FailState(key_index, 'stored state')
  end
  return x
end
