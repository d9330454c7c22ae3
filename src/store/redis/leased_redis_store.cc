#include "src/store/redis/leased_redis_store.h"

#include <string>
#include <utility>
#include <vector>

namespace sluice::internal {
namespace {

class LeasedRedisStore final : public RedisStore {
 public:
  LeasedRedisStore(std::unique_ptr<RedisStore> store, LeaseSource& source,
                   const LeaseOptions& options)
      : redis_(store.get()),
        lease_(std::make_unique<LeaseStore>(std::move(store), source, options)) {}

  absl::Status WaitForConnection(std::chrono::milliseconds timeout) override {
    return redis_->WaitForConnection(timeout);
  }
  std::vector<std::string> Warnings() const override { return redis_->Warnings(); }
  RedisStoreStats Stats() const override {
    RedisStoreStats stats = redis_->Stats();
    stats.leases = true;
    stats.lease = lease_->Stats();
    return stats;
  }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    lease_->Decide(checks, std::move(done));
  }
  std::optional<MultiDecision> DecideLocally(std::span<const LimitCheck> checks) override {
    return lease_->DecideLocally(checks);
  }
  std::optional<int64_t> SharingInstances() const override { return lease_->SharingInstances(); }

 private:
  // Owned by lease_, which gives back its unspent units through it before it goes.
  RedisStore* const redis_;
  std::unique_ptr<LeaseStore> lease_;
};

}  // namespace

LeaseOptions LeaseOptionsFromUrl(const StoreUrl& url, Clock* clock) {
  LeaseOptions options{.clock = clock};
  if (url.lease_refresh) options.refresh_target = *url.lease_refresh;
  if (url.lease_ttl) options.ttl = *url.lease_ttl;
  if (url.lease_max_units) options.max_want = *url.lease_max_units;
  return options;
}

std::unique_ptr<RedisStore> WithLeases(std::unique_ptr<RedisStore> store, LeaseSource& source,
                                       const LeaseOptions& options) {
  return std::make_unique<LeasedRedisStore>(std::move(store), source, options);
}

}  // namespace sluice::internal
