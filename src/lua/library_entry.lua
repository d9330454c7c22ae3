-- library_entry.lua: the end of the function library (FUNCTION LOAD): registers one function per
-- single-check piece, check_all, lease_all, lease_refund and lease_holders. This top level runs
-- once, when the library is loaded; a call (FCALL) runs only its function. The names carry the
-- library's version, a hash of its text that lua_scripts.cc puts in place of @VERSION@, so that
-- sluice versions sharing one Redis each call their own functions.

local kFunctionPrefix = 'sluice_@VERSION@_'
redis.register_function(kFunctionPrefix .. 'check_fixed_window', CheckFixedWindow)
redis.register_function(kFunctionPrefix .. 'check_sliding_window', CheckSlidingWindow)
redis.register_function(kFunctionPrefix .. 'check_sliding_log', CheckSlidingLog)
redis.register_function(kFunctionPrefix .. 'check_token_bucket', CheckTokenBucket)
redis.register_function(kFunctionPrefix .. 'check_gcra', CheckGcra)
redis.register_function(kFunctionPrefix .. 'check_all', CheckAll)
redis.register_function(kFunctionPrefix .. 'lease_all', LeaseAll)
redis.register_function(kFunctionPrefix .. 'lease_refund', LeaseRefund)
redis.register_function(kFunctionPrefix .. 'lease_holders', LeaseHolders)
