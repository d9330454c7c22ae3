#include "src/store/redis/redis_lease.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include "sluice/store.h"

#include "src/store/lease/lease_source.h"
#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/script_status.h"
#include "src/store/redis/slot_groups.h"
#include "src/util/mutex.h"

namespace sluice::internal {
namespace {

// Joins the answers of one Refund()'s calls (one per slot): OK when all succeeded, else the first
// error. `done` runs once, on the thread of the last answer, outside the lock.
class RefundJoin {
 public:
  RefundJoin(size_t calls, LeaseSource::RefundCallback done)
      : pending_(calls), done_(std::move(done)) {}

  void Arrive(absl::Status status) {
    LeaseSource::RefundCallback done;
    absl::Status result;
    {
      MutexLock lock(&mu_);
      if (!status.ok() && status_.ok()) status_ = std::move(status);
      if (--pending_ > 0) return;
      done = std::move(done_);
      result = std::move(status_);
    }
    std::move(done)(std::move(result));
  }

 private:
  Mutex mu_;
  size_t pending_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  LeaseSource::RefundCallback done_ ABSL_GUARDED_BY(mu_);
};

// The checks' Redis keys, or InvalidArgument when one is named twice: a lease is granted per key.
absl::StatusOr<std::vector<std::string>> DistinctRedisKeys(std::span<const LimitCheck> checks,
                                                           const RedisKeyScheme& keys) {
  std::vector<std::string> redis_keys;
  redis_keys.reserve(checks.size());
  for (const LimitCheck& check : checks) {
    redis_keys.push_back(keys.StateKey(check.key, check.limit.algorithm));
  }
  std::vector<std::string> sorted = redis_keys;
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease: the checks of one call need distinct keys; ", *twice, " is named twice"));
  }
  return redis_keys;
}

absl::Status ValidateLease(std::span<const LimitCheck> checks, std::span<const LeaseWant> wants) {
  if (absl::Status s = ValidateChecks(checks); !s.ok()) return s;
  for (size_t i = 0; i < checks.size(); ++i) {
    // LeaseStore sends such checks on the exact path.
    if (checks[i].count_rejected) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checks[", i, "].count_rejected: a check counting rejected hits takes no lease"));
    }
    // A credit gives units back: there is nothing to lease (LeaseStore sends it on the exact
    // path, and lease_all refuses it too).
    if (checks[i].refund) {
      return absl::InvalidArgumentError(
          absl::StrCat("checks[", i, "].refund: a credit takes no lease"));
    }
  }
  if (checks.size() > static_cast<size_t>(kMaxChecksPerScript)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checks: at most ", kMaxChecksPerScript, " per call, got ", checks.size()));
  }
  if (wants.size() != checks.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease: ", wants.size(), " wants for ", checks.size(), " checks"));
  }
  for (const LeaseWant& want : wants) {
    if (absl::Status s = ValidateLeaseWant(want); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

void RedisLeaseCalls::DecideAndLease(std::span<const LimitCheck> checks,
                                     std::span<const LeaseWant> wants,
                                     LeaseSource::LeaseCallback done) {
  if (absl::Status s = ValidateLease(checks, wants); !s.ok()) {
    std::move(done)(std::move(s));
    return;
  }
  absl::StatusOr<std::vector<std::string>> redis_keys = DistinctRedisKeys(checks, keys_);
  if (!redis_keys.ok()) {
    std::move(done)(std::move(redis_keys).status());
    return;
  }
  // One script touches one slot of a Cluster, and a grant is all or nothing: never split.
  if (cluster_) {
    if (const std::vector<SlotGroup> groups = GroupBySlot(*redis_keys); groups.size() > 1) {
      const size_t other = groups[1].checks[0];
      std::move(done)(absl::InvalidArgumentError(absl::StrCat(
          "checks[", other,
          "].key: on Redis Cluster all keys of one leasing call must hash to one slot (or share "
          "a tag, sluice/key.h); ",
          (*redis_keys)[other], " and ", (*redis_keys)[0], " do not (docs/redis.md)")));
      return;
    }
  }
  std::vector<std::string> args;
  args.reserve(2 * checks.size());
  for (const LimitCheck& check : checks) AppendCheckArguments(check.limit, check.cost, args);
  for (const LeaseWant& want : wants) AppendWantArgument(want, args);
  const size_t n = checks.size();
  std::string first_key = (*redis_keys)[0];
  runner_.Run(LeaseAllScript(), *redis_keys, args,
              [n, first_key = std::move(first_key),
               done = std::move(done)](const absl::StatusOr<RedisReply>& reply) mutable {
                std::move(done)(ScriptResult(reply, first_key, [n](const RedisReply& r) {
                  return ParseLeaseAllReply(r, n);
                }));
              });
}

void RedisLeaseCalls::Refund(std::span<const LeaseRefund> refunds,
                             LeaseSource::RefundCallback done) {
  if (refunds.empty() || refunds.size() > static_cast<size_t>(kMaxChecksPerScript)) {
    std::move(done)(absl::InvalidArgumentError(
        absl::StrCat("refunds: 1 to ", kMaxChecksPerScript, " per call, got ", refunds.size())));
    return;
  }
  std::vector<std::string> redis_keys;
  redis_keys.reserve(refunds.size());
  for (const LeaseRefund& refund : refunds) {
    if (absl::Status s = ValidateLeaseRefund(refund); !s.ok()) {
      std::move(done)(std::move(s));
      return;
    }
    redis_keys.push_back(keys_.StateKey(refund.check.key, refund.check.limit.algorithm));
  }
  // Refunds are independent: on a Cluster, one call per slot, all sent at once.
  std::vector<SlotGroup> groups;
  if (cluster_) {
    groups = GroupBySlot(redis_keys);
  } else {
    groups.push_back(SlotGroup{.slot = 0, .checks = {}});
    for (size_t i = 0; i < refunds.size(); ++i) groups[0].checks.push_back(i);
  }
  auto join = std::make_shared<RefundJoin>(groups.size(), std::move(done));
  for (const SlotGroup& group : groups) {
    std::vector<std::string> keys;
    std::vector<std::string> args;
    keys.reserve(group.checks.size());
    args.reserve(2 * group.checks.size());
    for (const size_t i : group.checks) {
      keys.push_back(redis_keys[i]);
      AppendCheckArguments(refunds[i].check.limit, 0, args);
    }
    for (const size_t i : group.checks) AppendRefundArgument(refunds[i], args);
    std::string first_key = keys[0];
    runner_.Run(LeaseRefundScript(), keys, args,
                [n = group.checks.size(), first_key = std::move(first_key),
                 join](const absl::StatusOr<RedisReply>& reply) {
                  join->Arrive(ScriptResult(reply, first_key, [n](const RedisReply& r) {
                                 return ParseLeaseRefundReply(r, n);
                               }).status());
                });
  }
}

void RedisLeaseCalls::Announce(std::string_view id, std::chrono::microseconds ttl,
                               LeaseSource::HoldersCallback done) {
  constexpr size_t kMaxIdBytes = 64;  // kMaxHolderIdBytes in lease_entry.lua
  if (id.empty() || id.size() > kMaxIdBytes || ttl < std::chrono::milliseconds(1) ||
      ttl > std::chrono::hours(1)) {
    std::move(done)(absl::InvalidArgumentError(absl::StrCat(
        "lease holders: the id must be 1 to ", kMaxIdBytes,
        " bytes and the ttl 1 ms to 1 hour; got ", id.size(), " bytes, ", ttl.count(), " us")));
    return;
  }
  std::string key = keys_.HoldersKey();
  std::vector<std::string> keys = {key};
  std::vector<std::string> args = {std::string(id), absl::StrCat(ttl.count())};
  runner_.Run(LeaseHoldersScript(), keys, args,
              [key = std::move(key),
               done = std::move(done)](const absl::StatusOr<RedisReply>& reply) mutable {
                std::move(done)(ScriptResult(reply, key, ParseLeaseHoldersReply));
              });
}

}  // namespace sluice::internal
