-- time.lua: the production time source. Time comes from the Redis server's clock (TIME), never
-- from the caller, so application hosts with skewed clocks all see one time, and no caller can
-- pass a time that resets its own limit.

-- The script's own arguments start right after this many leading ARGV entries.
local kArgvBase = 0

-- Returns the Redis server's time in integer microseconds since the Unix epoch (about 2^50.6 in
-- 2024, so exact as a double). `args` is unused here (time_for_test.lua reads it).
local function NowMicros(args)
  local t = Call('TIME')
  return ToNumber(t[1]) * 1000000 + ToNumber(t[2])
end

-- Writes a string state and its expiry in one command: `key` expires when its state becomes
-- equivalent to no state, at `expiry_ms` (the spec's expiry rounded up to the millisecond), so a
-- key never lives shorter than its state matters. The absolute form cannot extend a window: the
-- expiry is a function of the state, not of when the last write happened. (PXAT needs Redis 6.2.)
-- A key that already expires at `expiry_ms` is written with SET ... KEEPTTL instead (the fixed
-- and sliding windows, whose states record the expiry they were written with): it costs Redis
-- about half as much, since SET ... PXAT rewrites the command for replication.
local function SetState(key, value, expiry_ms, now_us)
  Call('SET', key, value, 'PXAT', Format('%d', expiry_ms))
end

-- The same expiry for a key written by other commands (the sliding log's sorted set).
local function SetExpiry(key, expiry_ms, now_us)
  Call('PEXPIREAT', key, Format('%d', expiry_ms))
end
