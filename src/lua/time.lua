-- time.lua: the production time source. Time comes from the Redis server's clock (TIME), never
-- from the caller, so application hosts with skewed clocks all see one time, and no caller can
-- pass a time that resets its own limit.

-- The script's own arguments start right after this many leading ARGV entries.
local kArgvBase = 0

-- Returns the Redis server's time in integer microseconds since the Unix epoch (about 2^50.6 in
-- 2024, so exact as a double).
local function NowMicros()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Writes a string state and its expiry in one command: `key` expires when its state becomes
-- equivalent to no state, at `expiry_us` rounded up to the millisecond, so a key never lives
-- shorter than its state matters. The absolute form cannot extend a window: the expiry is a
-- function of the state, not of when the last write happened. (SET ... PXAT needs Redis 6.2.)
local function SetState(key, value, expiry_us, now_us)
  redis.call('SET', key, value, 'PXAT', string.format('%d', CeilDiv(expiry_us, 1000)))
end

-- The same expiry for a key written by other commands (the sliding log's sorted set).
local function SetExpiry(key, expiry_us, now_us)
  redis.call('PEXPIREAT', key, string.format('%d', CeilDiv(expiry_us, 1000)))
end
