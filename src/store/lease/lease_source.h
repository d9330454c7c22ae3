// LeaseSource: the store side of leases (docs/algorithms.md, "Leases"): a check that, in the same
// atomic step, withdraws extra units for this instance to spend in memory later.
//
// A grant is the existing check with a larger cost: the units are recorded in the store before
// they are spent, so no instance can admit what the store did not grant. The lease store
// (lease_store.h) spends them; the Redis store implements this interface in its scripts, and the
// C++ reference (src/algorithm/lease.h) in memory for tests.
//
// Thread safety: implementations are thread-safe.
#ifndef SLUICE_STORE_LEASE_LEASE_SOURCE_H_
#define SLUICE_STORE_LEASE_LEASE_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "sluice/store.h"

namespace sluice::internal {

// What one check of a leasing call asks for beyond its cost.
struct LeaseWant {
  // Extra units wanted, 0 <= units <= kMaxCost; 0 asks for none (an exact check).
  int64_t units = 0;
  // How long the lease may be spent, for the algorithms whose lease ends after a fixed time
  // (sliding_log, token_bucket, gcra); the window algorithms' leases end with the window.
  // 1 ms <= ttl <= the limit's period.
  std::chrono::microseconds ttl{std::chrono::milliseconds(100)};
};

// What one check of a leasing call was granted.
struct LeaseGrant {
  // Units withdrawn for this instance, 0 <= granted <= want.units; 0 when the call was denied.
  int64_t granted = 0;
  // The store's time of the decision and the end of the lease, in microseconds since the epoch
  // on the store's clock (Redis TIME). Units may be spent while the store's time is before
  // `ends_us`; a refund names the lease by `ends_us` and `granted`.
  int64_t now_us = 0;
  int64_t ends_us = 0;
};

struct LeasedDecision {
  // As Store::CheckAll() answers the checks (the request's own cost; the grant is not in it,
  // except that `remaining` is what the store has left after the grant too).
  MultiDecision decision;
  // One per check, in order.
  std::vector<LeaseGrant> grants;
};

// One unspent part of a lease to give back.
struct LeaseRefund {
  LimitCheck check;     // the key and limit the lease was granted on (cost ignored)
  LeaseGrant grant;     // the grant as it was received
  int64_t unspent = 0;  // 0 < unspent <= grant.granted
};

class LeaseSource {
 public:
  using LeaseCallback = absl::AnyInvocable<void(absl::StatusOr<LeasedDecision>) &&>;
  using RefundCallback = absl::AnyInvocable<void(absl::Status) &&>;
  using HoldersCallback = absl::AnyInvocable<void(absl::StatusOr<int64_t>) &&>;

  virtual ~LeaseSource() = default;

  // LeaseSource::DecideAndLease()
  //
  // Decides `checks` all-or-nothing as Store::CheckAll(); when every check passes, also grants
  // check i up to wants[i].units more units, as docs/algorithms.md "Leases" specifies (never
  // more than half of what remains after the request). REQUIRES: checks validated, non-empty,
  // distinct keys; wants.size() == checks.size(). `done` runs exactly once, as Store::Decide().
  virtual void DecideAndLease(std::span<const LimitCheck> checks, std::span<const LeaseWant> wants,
                              LeaseCallback done) = 0;

  // LeaseSource::Refund()
  //
  // Gives back unspent units of leases that have not ended; a refund of a lease that has ended,
  // or whose state is gone, changes nothing. At most as many refunds per call as checks per
  // CheckAll() call.
  virtual void Refund(std::span<const LeaseRefund> refunds, RefundCallback done) = 0;

  // LeaseSource::Announce()
  //
  // Records the instance `id` (1 to 64 bytes) as a leaseholder for `ttl` (1 ms to 1 hour) on the
  // store's clock, and answers how many instances are recorded now, this one included (at most
  // 10,000). A failure policy divides a limit by it during an outage (docs/redis.md, "Leases").
  // Default: Unimplemented (a source that cannot count its holders).
  virtual void Announce(std::string_view id, std::chrono::microseconds ttl, HoldersCallback done) {
    (void)id;
    (void)ttl;
    std::move(done)(absl::UnimplementedError("this lease source does not count its holders"));
  }
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_LEASE_LEASE_SOURCE_H_
