// The allocation rule of docs/rlqs.md ("Fair shares"), pure in time: the memory allocator runs it,
// and src/lua/quota_share.lua is its line-by-line twin, so one test drives both on the same
// inputs (tests/server/rlqs/quota_allocator_equivalence_test.cc).
//
// Thread safety: pure functions.
#ifndef SLUICE_SERVER_RLQS_MAX_MIN_SHARE_H_
#define SLUICE_SERVER_RLQS_MAX_MIN_SHARE_H_

#include <cstdint>
#include <map>
#include <string>

#include "src/server/rlqs/quota_allocator.h"

namespace sluice::internal {

// What a bucket keeps per client: its last demand, its grant, and when the grant (and the record)
// ends, in microseconds of the allocator's clock.
struct QuotaClientRecord {
  uint64_t demand = 0;
  uint64_t granted = 0;
  int64_t ends_us = 0;
};

// Ordered by client id, the order ties in demand are broken in (Lua sorts the same way).
using QuotaRecords = std::map<std::string, QuotaClientRecord>;

// MaxMinShares()
//
// Returns each client's max-min fair share of `limit` for the demands in `records`: clients in
// ascending (demand, id) order each get min(demand, floor(what remains / clients left)). The
// shares are integers summing to at most `limit`.
std::map<std::string, uint64_t> MaxMinShares(const QuotaRecords& records, uint64_t limit);

// DecideQuotaShare()
//
// Applies `report` (REQUIRES: ValidateQuotaReport() is OK) to `records` at `now_us`: drops the
// records that ended, records the client's demand, and grants it
// min(its max-min share, limit - the grants of the other live clients), so the grants that may
// still be enforced never sum past the limit. The client's record then ends at
// now + ttl + kQuotaDeliveryGrace.
// A top-up (report.top_up) of a live record changes it only to raise its grant.
QuotaShare DecideQuotaShare(QuotaRecords& records, const QuotaReport& report, int64_t now_us);

}  // namespace sluice::internal

#endif  // SLUICE_SERVER_RLQS_MAX_MIN_SHARE_H_
