#!lua name=sluice_bench_floor
-- Reference functions for bench/script_cost.sh, never used by sluice: what a fixed-window
-- decision costs Redis at the least under sluice's guarantees, and the minimal fixed-window
-- script as a function, so the table shows where the floor is.
--
-- floor_fixed_window: the commands a fixed window must make (TIME; GET, since a denial must not
-- write; SET with the key's TTL kept within a window) and the conversions it cannot skip (the time
-- to a number, a packed state and a packed reply), without validating or deciding anything.
-- minimal_fixed_window: ../shared/peer-bench/fixed_window.lua (INCR, PEXPIRE on the first hit,
-- PTTL) as a function.

local function FloorFixedWindow(keys, args)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local v = redis.call('GET', keys[1])
  local state = struct.pack('<I8I8I8', now - now % 60000000, 1, 0)
  if v then
    redis.call('SET', keys[1], state, 'KEEPTTL')
  else
    redis.call('SET', keys[1], state, 'PX', '60000')
  end
  return struct.pack('<i8i8i8i8i8', 1, 10000000, 9999999, 60000000 - now % 60000000, 0)
end

local function MinimalFixedWindow(keys, args)
  local c = redis.call('INCR', keys[1])
  if c == 1 then
    redis.call('PEXPIRE', keys[1], args[2])
  end
  return {c, redis.call('PTTL', keys[1])}
end

redis.register_function('floor_fixed_window', FloorFixedWindow)
redis.register_function('minimal_fixed_window', MinimalFixedWindow)
