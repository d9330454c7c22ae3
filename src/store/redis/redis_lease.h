// The Redis store's side of leases (src/store/lease/lease_source.h; docs/algorithms.md, "Leases";
// docs/redis.md, "Leases"): DecideAndLease() is one lease_all script call, Refund() one
// lease_refund call per Cluster slot.
//
// A store made by RedisStore::Create() is also an internal::LeaseSource; LeaseSourceOf() hands it
// to the lease store (src/store/lease/) without the public header naming internal types.
//
// Example:
//   internal::LeaseSource* source = LeaseSourceOf(*redis_store);  // not owned
//   source->DecideAndLease(checks, wants, [](absl::StatusOr<internal::LeasedDecision> d) { ... });
//
// Errors, deadlines and callbacks as the store's checks (redis_store.h): InvalidArgument, inline,
// for a bad check, want or refund, repeated keys in one DecideAndLease(), or, on Redis Cluster,
// a DecideAndLease() whose keys are in more than one slot (a grant is all or nothing, as
// CheckAll() with CrossSlot::kRefuse); Unavailable, DeadlineExceeded, Internal as Decide().
//
// Announce() is one lease_holders call.
//
// Thread safety: thread-safe, as the store.
#ifndef SLUICE_STORE_REDIS_REDIS_LEASE_H_
#define SLUICE_STORE_REDIS_REDIS_LEASE_H_

#include <chrono>
#include <span>
#include <string_view>

#include "sluice/redis_store.h"
#include "sluice/store.h"

#include "src/store/lease/lease_source.h"
#include "src/store/redis/redis_keys.h"
#include "src/store/redis/script_runner.h"

namespace sluice {

// LeaseSourceOf()
//
// Returns the LeaseSource of `store`, which lives as long as the store, or nullptr when `store`
// was not made by RedisStore::Create() (a test double).
internal::LeaseSource* LeaseSourceOf(RedisStore& store);

namespace internal {

// The leasing calls over a store's script runner and key scheme; RedisStoreImpl forwards its
// LeaseSource methods here. Not owning; the runner and the scheme outlive it.
class RedisLeaseCalls {
 public:
  RedisLeaseCalls(ScriptRunner& runner, const RedisKeyScheme& keys, bool cluster)
      : runner_(runner), keys_(keys), cluster_(cluster) {}

  // RedisLeaseCalls::DecideAndLease()
  //
  // LeaseSource::DecideAndLease(): validates its input (the lease store normally has), then
  // runs lease_all.
  void DecideAndLease(std::span<const LimitCheck> checks, std::span<const LeaseWant> wants,
                      LeaseSource::LeaseCallback done);

  // RedisLeaseCalls::Refund()
  //
  // LeaseSource::Refund(): validates the refunds, then runs lease_refund once per Cluster slot
  // (all at once on a single server); `done` gets OK when every call succeeded, else the first
  // error. Units a refund could not give back (the lease had ended) are not an error.
  void Refund(std::span<const LeaseRefund> refunds, LeaseSource::RefundCallback done);

  // RedisLeaseCalls::Announce()
  //
  // LeaseSource::Announce(): one lease_holders call on the key scheme's HoldersKey();
  // InvalidArgument, inline, for an id or ttl out of bounds.
  void Announce(std::string_view id, std::chrono::microseconds ttl,
                LeaseSource::HoldersCallback done);

 private:
  ScriptRunner& runner_;
  const RedisKeyScheme& keys_;
  const bool cluster_;
};

}  // namespace internal
}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_REDIS_LEASE_H_
