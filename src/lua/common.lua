-- common.lua: the library functions every piece calls, constants, exact integer helpers and the
-- binary formats of arguments, replies and states.
--
-- Every number in sluice's state is an integer below 2^53, which Lua's doubles hold exactly
-- (docs/algorithms.md, "Exact arithmetic"). Two things would still lose exactness, and the helpers
-- here avoid both: a division whose double quotient rounds across an integer (IDiv corrects it),
-- and Lua's own number-to-string conversion ('%.14g', which drops digits above 10^14): numbers
-- that Redis parses as integers are formatted with '%d'.
--
-- Cost (docs/redis.md, "Cost per call"): the same pieces make the function library (FCALL), whose
-- top level runs once at FUNCTION LOAD, and the EVALSHA scripts, whose whole body runs on every
-- call. What a call costs Redis is mostly its commands and the strings it makes: arguments,
-- replies and states are packed integers (struct), which cost a fraction of decimal text to parse
-- and to build, and a reply is one string rather than a table.

-- The library functions, cached as upvalues by Init() on a call's first line: a function library's
-- top level runs with only the redis API visible (string, math, struct are not there yet), and an
-- upvalue costs less than a global table lookup on every use.
local Call, Floor, ToNumber, Unpack, Pack, Format, Match, Find

local function Init()
  Call, Floor, ToNumber = redis.call, math.floor, tonumber
  Unpack, Pack = struct.unpack, struct.pack
  Format, Match, Find = string.format, string.match, string.find
end

local kMaxLimit = 4294967295 -- 2^32 - 1
local kMaxCost = 4294967296 -- 2^32
local kMaxPeriodUs = 31622400000000 -- 366 days
local kMaxSlidingLogLimit = 100000
local kMaxRateProduct = 1125899906842624 -- 2^50
local kMaxTimeUs = 9007199254740991 -- 2^53 - 1: the largest exact integer, bounds stored values
local kMaxNowUs = 4503599627370495 -- 2^52 - 1: docs/algorithms.md bounds `now` (year 2112)
local kMaxChecks = 64 -- checks per check_all call, so one call's work stays bounded

-- Algorithms, by their value in enum class Algorithm (lua_scripts.h encodes a check with it).
local kFixedWindow = 0
local kSlidingWindow = 1
local kSlidingLog = 2
local kTokenBucket = 3
local kGcra = 4
-- Added to a fixed window's algorithm byte: the check counts rejected hits (docs/algorithms.md,
-- "Counting rejected hits"; LimitCheck::count_rejected).
local kCountRejected = 128
-- Added to any algorithm's byte: the check is a credit, which gives back `cost` units charged
-- earlier (docs/algorithms.md, "Credits"; LimitCheck::refund). Only check_all decides credits.
local kRefund = 64

-- One check, one ARGV entry of kCheckBytes: algorithm, limit, period_us, capacity, cost,
-- little-endian (AppendCheckArguments() in lua_scripts.cc writes it).
local kCheckFormat = '<BI4I8I4I8'
local kCheckBytes = 25
-- One decision in a reply: allowed (1|0), limit, remaining, reset_after_us, retry_after_us.
local kDecisionFormat = '<i8i8i8i8i8'

-- Raises an error reply. Scripts validate every argument before their first write, so raising
-- here leaves no partial state behind (a Redis script is isolated, not rolled back).
local function Fail(message)
  error({err = 'SLUICE_BADARG ' .. message})
end

-- Raised when a stored state cannot be parsed: a key of ours was written by someone else.
local function FailState(key_index, what)
  error({err = 'SLUICE_BADSTATE key ' .. key_index .. ': ' .. what .. ' is not valid'})
end

-- The aligned window of max(now, window_start) (docs/algorithms.md, "fixed_window"): after a
-- backward time step the recorded window stays the current one. m % period is
-- m - floor(m / period) * period in doubles, exact except that the floor of a rounded quotient may
-- be one off, which the two tests correct. The Decide functions do this inline (a Lua call costs
-- Redis about as much as a command); the rarer credits call it.
local function WindowOf(window_start, now, period)
  local m = now
  if window_start > m then
    m = window_start
  end
  local window = m - m % period
  if window > m then
    window = window - period
  elseif window + period <= m then
    window = window + period
  end
  return window
end

-- floor(a / b) for integers 0 <= a < 2^53 and 0 < b < 2^53.
local function IDiv(a, b)
  local q = Floor(a / b)
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
-- a longer string cannot round into range. (Only the test-time `now` and states written by an
-- earlier version are decimal.)
local function ParseInt(text, lo, hi)
  if type(text) ~= 'string' or #text == 0 or #text > 16 or not Find(text, '^%d+$') then
    return nil
  end
  local x = ToNumber(text)
  if x == nil or x ~= x or x < lo or x > hi then
    return nil
  end
  return x
end

-- A field of a state written by an earlier version as decimal integers joined by ':' (read with
-- '(%d+)' captures, so digits only): refused when missing or beyond 2^53 - 1.
local function StateInt(text, key_index)
  local x = ToNumber(text)
  if x == nil or x > kMaxTimeUs then
    FailState(key_index, 'stored state')
  end
  return x
end
