-- quota_share.lua: one report of the Rate Limit Quota Service (docs/rlqs.md, "Fair shares"),
-- the twin of DecideQuotaShare() in src/server/rlqs/max_min_share.cc: the same steps in the same
-- order, so both give the same grants for the same reports and times.
--   keys[1]              the bucket's hash: client id -> kQuotaRecordFormat (demand, granted,
--                        ends_us); the key expires when its last record ends
--   args[kArgvBase + 1]  the client id, 1 to kMaxQuotaClientBytes bytes
--   args[kArgvBase + 2]  its demand, requests per unit, decimal (above kMaxQuotaDemand counts as it)
--   args[kArgvBase + 3]  the rule's limit, requests per unit, decimal, [0, kMaxQuotaLimit]
--   args[kArgvBase + 4]  the grant's ttl, microseconds, decimal, [1 s, 60 s]
--   args[kArgvBase + 5]  '1' for a top-up (a live record only ever has its grant raised), else '0'
-- Returns {granted, live clients, their summed demand, their summed grants, wanted} (integers).
-- Work is proportional to the bucket's live clients (at most kMaxQuotaClients), never to requests.

local kQuotaRecordFormat = '<I8I8I8'
local kQuotaRecordBytes = 24
local kMaxQuotaDemand = 1099511627776 -- 2^40
local kMaxQuotaLimit = 4294967295
local kMaxQuotaClients = 1000
local kMaxQuotaClientBytes = 64
local kMinQuotaTtlUs = 1000000
local kMaxQuotaTtlUs = 60000000
local kQuotaDeliveryGraceUs = 1000000

local function QuotaShare(keys, args)
  Init()
  local now = NowMicros(args)
  local client = args[kArgvBase + 1]
  if type(client) ~= 'string' or #client == 0 or #client > kMaxQuotaClientBytes then
    Fail('client: must be 1 to 64 bytes')
  end
  local demand = ParseInt(args[kArgvBase + 2], 0, kMaxTimeUs)
  if demand == nil then
    Fail('demand: must be a decimal integer')
  end
  if demand > kMaxQuotaDemand then
    demand = kMaxQuotaDemand
  end
  local limit = ParseInt(args[kArgvBase + 3], 0, kMaxQuotaLimit)
  if limit == nil then
    Fail('limit: must be an integer in [0, 2^32)')
  end
  local ttl_us = ParseInt(args[kArgvBase + 4], kMinQuotaTtlUs, kMaxQuotaTtlUs)
  if ttl_us == nil then
    Fail('ttl_us: must be an integer in [1 s, 60 s]')
  end
  local top_up = args[kArgvBase + 5]
  if top_up ~= '0' and top_up ~= '1' then
    Fail('top_up: must be 0 or 1')
  end
  local key = keys[1]

  -- The live records; the ended ones are deleted.
  local flat = Call('HGETALL', key)
  local ids, recs, ended = {}, {}, {}
  for i = 1, #flat, 2 do
    if #flat[i + 1] ~= kQuotaRecordBytes then
      FailState(1, 'quota record')
    end
    local d, g, e = Unpack(kQuotaRecordFormat, flat[i + 1])
    if e <= now then
      ended[#ended + 1] = flat[i]
    else
      ids[#ids + 1] = flat[i]
      recs[flat[i]] = {d, g, e}
    end
  end
  if #ended > 0 then
    Call('HDEL', key, unpack(ended))
  end

  local function Totals()
    local sum_demand, sum_granted = 0, 0
    for _, id in ipairs(ids) do
      sum_demand = sum_demand + recs[id][1]
      sum_granted = sum_granted + recs[id][2]
    end
    return sum_demand, sum_granted
  end

  if recs[client] == nil then
    if #ids >= kMaxQuotaClients then
      local sum_demand, sum_granted = Totals()
      return {0, #ids, sum_demand, sum_granted, 0}
    end
    ids[#ids + 1] = client
    recs[client] = {demand, 0, 0}
    top_up = '0'
  else
    recs[client][1] = demand
  end

  -- Max-min: ascending (demand, id), each min(demand, floor(remaining / clients left)). Client
  -- ids are fixed-length lowercase hex, so Redis's collation orders them as bytes, as C++ does.
  table.sort(ids, function(a, b)
    local da, db = recs[a][1], recs[b][1]
    if da ~= db then
      return da < db
    end
    return a < b
  end)
  local remaining, fair = limit, 0
  for i = 1, #ids do
    local equal = IDiv(remaining, #ids - i + 1)
    local share = recs[ids[i]][1]
    if share > equal then
      share = equal
    end
    if ids[i] == client then
      fair = share
    end
    remaining = remaining - share
  end

  -- Every other live grant may still be enforced: this one gets at most what they leave.
  local others = 0
  for _, id in ipairs(ids) do
    if id ~= client then
      others = others + recs[id][2]
    end
  end
  local free = limit - others
  if free < 0 then
    free = 0
  end
  local granted = fair
  if granted > free then
    granted = free
  end
  -- A top-up of a live record changes it only to raise its grant.
  if top_up == '1' and granted <= recs[client][2] then
    granted = recs[client][2]
  else
    recs[client] = {demand, granted, now + ttl_us + kQuotaDeliveryGraceUs}
  end
  Call('HSET', key, client, Pack(kQuotaRecordFormat, demand, granted, recs[client][3]))
  local last = now
  for _, id in ipairs(ids) do
    if recs[id][3] > last then
      last = recs[id][3]
    end
  end
  SetExpiry(key, CeilDiv(last, 1000), now)
  local sum_demand, sum_granted = Totals()
  return {granted, #ids, sum_demand, sum_granted, fair}
end
