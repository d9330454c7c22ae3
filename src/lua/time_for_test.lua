-- time_for_test.lua: the test-only time source. It replaces time.lua in the ...ForTest scripts
-- and library, which production code never loads (they are not even linked into the library).
-- The caller passes `now` in microseconds, in decimal, as ARGV[1], and the script's own
-- arguments follow, so one table of test vectors drives the C++ and the Lua implementations with
-- the same times.

local kArgvBase = 1

local function NowMicros(args)
  local now = ParseInt(args[1], 0, kMaxNowUs)
  if now == nil then
    Fail('now_us: must be an integer in [0, 2^52)')
  end
  return now
end

-- Test time is unrelated to the server's clock, so an absolute PXAT would delete the key at
-- once. The key gets the spec's lifetime relative to the server's clock instead, plus a slack
-- that keeps it alive while a test replays a sequence slower than its fake time passes. Keeping a
-- state past its expiry cannot change a decision: after its expiry a state is equivalent to no
-- state (docs/algorithms.md). The production TTLs are tested against the production scripts.
local kExpirySlackMsForTest = 3600000

local function SetState(key, value, expiry_ms, now_us)
  Call('SET', key, value, 'PX',
    Format('%d', CeilDiv(expiry_ms * 1000 - now_us, 1000) + kExpirySlackMsForTest))
end

local function SetExpiry(key, expiry_ms, now_us)
  Call('PEXPIRE', key,
    Format('%d', CeilDiv(expiry_ms * 1000 - now_us, 1000) + kExpirySlackMsForTest))
end
