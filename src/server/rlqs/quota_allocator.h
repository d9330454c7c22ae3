// QuotaAllocator: shares one rule's limit among the clients (Envoy streams) that report a bucket
// of the Rate Limit Quota Service, by max-min fairness, counting every grant a client may still be
// enforcing (docs/rlqs.md, "Fair shares").
//
// A report says how many requests per unit of the rule one client wants (its demand, measured by
// the server); Allocate() records it for the client's TTL and answers the client's grant. The
// memory allocator does this inside one sluiced; the Redis one in one script call per report, so
// that every sluiced on the same Redis shares one budget.
//
// Example:
//   allocator.Allocate({.bucket = "domain\x1fname=a", .client = id, .demand = 30, .limit = 10,
//                       .ttl = QuotaTtl(5s)},
//                      [](absl::StatusOr<QuotaShare> share) { ... share->granted ... });
//
// Thread safety: implementations are thread-safe.
#ifndef SLUICE_SERVER_RLQS_QUOTA_ALLOCATOR_H_
#define SLUICE_SERVER_RLQS_QUOTA_ALLOCATOR_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice {

// Bounds of a report, which both allocators enforce the same way.
inline constexpr size_t kMaxQuotaBucketBytes = 512;
inline constexpr size_t kMaxQuotaClientBytes = 64;
// Demands above this are recorded as this: far above any limit, and exact in a Lua double.
inline constexpr uint64_t kMaxQuotaDemand = uint64_t{1} << 40;
inline constexpr uint64_t kMaxQuotaLimit = 4294967295;  // as a rule's requests_per_unit
// Live clients per bucket: past it a new client is granted nothing (its record is not kept), so
// one report's work stays bounded.
inline constexpr size_t kMaxQuotaClients = 1000;
inline constexpr std::chrono::seconds kMinQuotaTtl{1};
inline constexpr std::chrono::seconds kMaxQuotaTtl{60};
// How long a record outlives the grant it holds: an Envoy starts a grant's TTL when the answer
// reaches it, after the store decided, so the grant counts this much longer than it is sent for.
inline constexpr std::chrono::seconds kQuotaDeliveryGrace{1};

// One client's report on one bucket.
struct QuotaReport {
  // The bucket's identity: the domain and the bucket's entries, as the service composes it. Every
  // client reporting the same bucket string shares `limit`. 1 to kMaxQuotaBucketBytes bytes.
  std::string bucket;
  // The client: unique per stream across every sluiced. 1 to kMaxQuotaClientBytes bytes.
  std::string client;
  // Requests per unit of the rule the client saw (allowed + denied), measured over the time the
  // server saw pass; values above kMaxQuotaDemand count as kMaxQuotaDemand.
  uint64_t demand = 0;
  // The rule's requests per unit, shared by every client of the bucket; [0, kMaxQuotaLimit].
  uint64_t limit = 0;
  // How long the grant lives (QuotaTtl()): the record, and the grant it holds, count until then.
  // Whole seconds in [kMinQuotaTtl, kMaxQuotaTtl].
  std::chrono::seconds ttl{kMinQuotaTtl};
  // A top-up, not a report: the server asks again between the client's reports because its grant
  // was held below its share by the other clients' grants (QuotaShare::wanted), which may have
  // shrunk since. A top-up only ever raises the client's live grant, and leaves the record as it
  // is when it cannot (docs/rlqs.md, "Top-ups").
  bool top_up = false;
};

// The answer to a report.
struct QuotaShare {
  // Requests per unit this client may admit until the TTL ends; 0 means deny all.
  uint64_t granted = 0;
  // Its max-min share for its demand: what it would be granted were no other live grant in the
  // way. `granted < wanted` while the others' grants are still shrinking to their shares.
  uint64_t wanted = 0;
  std::chrono::seconds ttl{0};
  // The bucket's live clients (this one included), their summed demand and their summed grants
  // (this one's new grant included), for metrics.
  uint64_t clients = 0;
  uint64_t demand = 0;
  uint64_t granted_total = 0;
};

// QuotaTtl()
//
// Returns the TTL of a grant to a client that reports every `report_interval`: three intervals,
// rounded up to whole seconds, in [kMinQuotaTtl, kMaxQuotaTtl]. Envoy counts whole seconds only
// and expires an unset (or zero) TTL at once, so a grant always lives at least a second; three
// intervals let a client miss two reports before its grant, and its share, lapse.
std::chrono::seconds QuotaTtl(std::chrono::microseconds report_interval);

// QuotaMaxTokens()
//
// Returns the max_tokens to send with a grant of `granted` (> 0) to a client whose bucket last had
// `last_max_tokens` (0: none, or a blanket rule), `saturated` if its last report had denials: the
// grant, except that a saturated client's grant rises with its old max_tokens kept. Envoy starts a
// changed bucket full unless it held under about one token (docs/rlqs.md, "Token bucket rule"); a
// saturated client's bucket is nearly empty, and with its size unchanged it stays so, instead of
// admitting a whole new bucket on top of its rate. Never above the grant, so the max_tokens of all
// live grants still sum to at most the limit.
uint64_t QuotaMaxTokens(uint64_t granted, uint64_t last_max_tokens, bool saturated);

// ValidateQuotaReport()
//
// Returns OK, or InvalidArgument naming the field out of bounds.
absl::Status ValidateQuotaReport(const QuotaReport& report);

class QuotaAllocator {
 public:
  using ShareCallback = absl::AnyInvocable<void(absl::StatusOr<QuotaShare>) &&>;

  virtual ~QuotaAllocator() = default;

  // QuotaAllocator::Allocate()
  //
  // Records `report` and calls `done` exactly once with the client's share, InvalidArgument
  // (inline) for a report ValidateQuotaReport() refuses, or the store's Unavailable /
  // DeadlineExceeded / Internal. `done` may run inline or on a store thread.
  virtual void Allocate(const QuotaReport& report, ShareCallback done) = 0;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_RLQS_QUOTA_ALLOCATOR_H_
