#include "sluice/redis_store.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

#include "sluice/status_macros.h"
#include "sluice/store_url.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_router_factory.h"
#include "src/store/redis/leased_redis_store.h"
#include "src/store/redis/lua_scripts.h"
#include "src/store/redis/redis_endpoint_url.h"
#include "src/store/redis/redis_keys.h"
#include "src/store/redis/redis_lease.h"
#include "src/store/redis/script_runner.h"
#include "src/store/redis/script_status.h"
#include "src/store/redis/slot_groups.h"

namespace sluice {
namespace {

using internal::ScriptResult;

// A RedisStore, and the store side of leases (redis_lease.h).
class RedisStoreImpl final : public RedisStore, public internal::LeaseSource {
 public:
  RedisStoreImpl(const RedisStoreOptions& options, RedisKeyScheme keys,
                 std::shared_ptr<RedisRouter> router)
      : options_(options),
        keys_(std::move(keys)),
        router_(std::move(router)),
        runner_(router_, {.timeout = options.command_timeout,
                          .clock = options.clock,
                          .min_replicas = options.min_replicas,
                          .min_replicas_timeout = options.min_replicas_timeout,
                          .use_functions = options.use_functions}),
        warnings_(std::make_shared<WarningList>()),
        lease_calls_(runner_, keys_, options_.cluster) {}
  RedisStoreImpl(const RedisStoreImpl&) = delete;
  RedisStoreImpl& operator=(const RedisStoreImpl&) = delete;

  ~RedisStoreImpl() override {
    // The listener uses this store; once removed it is not running and never runs again.
    router_->SetPrimaryListener(nullptr);
    // The router fails its pending commands with Unavailable; the runner's callbacks hold it only
    // weakly, so nothing is resent after this point.
    router_.reset();
  }

  void Start() {
    // Best effort and asynchronous: Redis may be down at start, and checks load the scripts on
    // demand anyway. Preloading (the function library, or the scripts where functions are off or
    // missing) spares the first checks a round trip, finds out whether the server has functions,
    // and verifies that it names what it loaded as computed here. The router tells us each primary,
    // the ones it knows now and, on a cluster, each one it finds later (a promoted replica).
    // The eviction-policy check goes with it: a Sentinel-managed primary is only known once the
    // Sentinels named it, and a promoted replica may be configured differently.
    router_->SetPrimaryListener([this](const std::shared_ptr<RedisClient>& primary) {
      PreloadScriptsOn(primary);
      if (options_.check_eviction_policy) {
        CheckEvictionPolicyOn(*primary, options_.connect_timeout + options_.command_timeout);
      }
    });
  }

  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    if (checks.size() > static_cast<size_t>(kMaxChecksPerScript)) {
      std::move(done)(absl::InvalidArgumentError(
          absl::StrCat("checks: at most ", kMaxChecksPerScript, " per call, got ", checks.size())));
      return;
    }
    std::vector<std::string> redis_keys;
    redis_keys.reserve(checks.size());
    for (const LimitCheck& check : checks) {
      redis_keys.push_back(keys_.StateKey(check.key, check.limit.algorithm));
    }
    if (options_.cluster) {
      // One script may only touch one slot of a Cluster.
      std::vector<SlotGroup> groups = GroupBySlot(redis_keys);
      if (groups.size() > 1) {
        if (options_.cross_slot == CrossSlot::kRefuse) {
          const size_t other = groups[1].checks[0];
          std::move(done)(absl::InvalidArgumentError(absl::StrCat(
              "checks[", other,
              "].key: on Redis Cluster all keys of one CheckAll must hash to one slot (or share "
              "a tag, sluice/key.h); ",
              redis_keys[other], " and ", redis_keys[0], " do not (docs/redis.md)")));
          return;
        }
        CheckAllSplit(checks, redis_keys, groups, std::move(done));
        return;
      }
    }
    RunChecks(checks, /*indices=*/{}, redis_keys, std::move(done));
  }

  void DecideAndLease(std::span<const LimitCheck> checks,
                      std::span<const internal::LeaseWant> wants, LeaseCallback done) override {
    lease_calls_.DecideAndLease(checks, wants, std::move(done));
  }

  void Refund(std::span<const internal::LeaseRefund> refunds, RefundCallback done) override {
    lease_calls_.Refund(refunds, std::move(done));
  }

  void Announce(std::string_view id, std::chrono::microseconds ttl, HoldersCallback done) override {
    lease_calls_.Announce(id, ttl, std::move(done));
  }

  absl::Status WaitForConnection(std::chrono::milliseconds timeout) override {
    return router_->WaitForConnection(timeout);
  }

  std::vector<std::string> Warnings() const override {
    absl::MutexLock lock(&warnings_->mu);
    return warnings_->list;
  }

  RedisStoreStats Stats() const override {
    const ScriptRunnerStats runner = runner_.Stats();
    const RedisClientStats client = router_->RouterStats();
    return RedisStoreStats{.script_calls = runner.runs,
                           .noscript_resends = runner.noscript_resends,
                           .functions = runner.functions,
                           .connects = client.connects,
                           .connect_failures = client.connect_failures,
                           .disconnects = client.disconnects};
  }

 private:
  struct WarningList {
    mutable absl::Mutex mu;
    std::vector<std::string> list ABSL_GUARDED_BY(mu);
  };

  // The callback of RunCheck() that answers a Decide() of one check.
  // The error is moved out, not copied: `d` dies on this thread after `done` has handed the answer
  // to its caller, and must not still share the status with it.
  static DecisionCallback OneDecision(MultiDecisionCallback done) {
    return [done = std::move(done)](absl::StatusOr<Decision> d) mutable {
      if (!d.ok()) {
        std::move(done)(std::move(d).status());
        return;
      }
      const bool allowed = d->allowed;
      std::move(done)(MultiDecision{.allowed = allowed, .decisions = {*std::move(d)}});
    };
  }

  // Runs one check's script on `redis_key`. REQUIRES: the check is not a credit (RunChecks()).
  void RunCheck(std::string redis_key, const Limit& limit, int64_t cost, bool count_rejected,
                DecisionCallback done) {
    std::vector<std::string> args;
    args.reserve(kArgsPerCheck);
    AppendCheckArguments(limit, cost, args, count_rejected);
    const std::vector<std::string> keys = {redis_key};
    // Each algorithm has its own script, so Redis runs only this algorithm's code.
    runner_.Run(CheckScript(limit.algorithm), keys, args,
                [redis_key = std::move(redis_key),
                 done = std::move(done)](const absl::StatusOr<RedisReply>& reply) mutable {
                  std::move(done)(ScriptResult(
                      reply, redis_key, [](const RedisReply& r) { return ParseCheckReply(r); }));
                });
  }

  // Runs the all-or-nothing script over `redis_keys` (one slot on a Cluster).
  void RunCheckAll(std::vector<std::string> redis_keys, const std::vector<std::string>& args,
                   MultiDecisionCallback done) {
    const size_t n = redis_keys.size();
    std::string first_key = redis_keys[0];
    runner_.Run(CheckAllScript(), redis_keys, args,
                [n, first_key = std::move(first_key),
                 done = std::move(done)](const absl::StatusOr<RedisReply>& reply) mutable {
                  std::move(done)(ScriptResult(reply, first_key, [n](const RedisReply& r) {
                    return ParseCheckAllReply(r, n);
                  }));
                });
  }

  // CrossSlot::kSplit: one atomic call per slot group, all sent before any answer is awaited;
  // `done` runs when the last group answers (inline if every group fails before reaching Redis).
  void CheckAllSplit(std::span<const LimitCheck> checks, std::vector<std::string>& redis_keys,
                     const std::vector<SlotGroup>& groups, MultiDecisionCallback done) {
    auto join = std::make_shared<SplitJoin>(checks.size(), groups.size(), std::move(done));
    for (const SlotGroup& group : groups) {
      RunChecks(checks, group.checks, redis_keys,
                [join, indices = group.checks](absl::StatusOr<MultiDecision> m) {
                  if (!m.ok()) {
                    join->Fail(m.status());
                  } else {
                    join->Record(indices, *std::move(m));
                  }
                });
    }
  }

  // Decides checks[i] for each i of `indices` (one slot on a Cluster; empty for all of them) in
  // one atomic call, whose keys are redis_keys[i] (moved from). One check takes the single-check
  // script: it decides exactly as check_all with one check does (the Lua vectors test runs every
  // vector through both) and costs Redis less. A credit (LimitCheck::refund) always takes
  // check_all, the only script that decides credits, alone or not. The one place that chooses
  // between the two.
  void RunChecks(std::span<const LimitCheck> checks, std::span<const size_t> indices,
                 std::vector<std::string>& redis_keys, MultiDecisionCallback done) {
    const size_t n = indices.empty() ? checks.size() : indices.size();
    const auto index = [indices](size_t j) { return indices.empty() ? j : indices[j]; };
    if (n == 1 && !checks[index(0)].refund) {
      const size_t i = index(0);
      RunCheck(std::move(redis_keys[i]), checks[i].limit, checks[i].cost, checks[i].count_rejected,
               OneDecision(std::move(done)));
      return;
    }
    std::vector<std::string> group_keys;
    std::vector<std::string> args;
    group_keys.reserve(n);
    args.reserve(kArgsPerCheck * n);
    for (size_t j = 0; j < n; ++j) {
      const size_t i = index(j);
      group_keys.push_back(std::move(redis_keys[i]));
      AppendCheckArguments(checks[i].limit, checks[i].cost, args, checks[i].count_rejected,
                           checks[i].refund);
    }
    RunCheckAll(std::move(group_keys), args, std::move(done));
  }

  void PreloadScriptsOn(const std::shared_ptr<RedisClient>& primary) {
    runner_.PrepareOn(primary, ProductionScripts(),
                      [](std::string_view name, const absl::Status& status) {
                        if (!status.ok() && status.code() == absl::StatusCode::kInternal) {
                          spdlog::error("redis store: preloading {}: {}", name, status.ToString());
                        }
                      });
  }

  void CheckEvictionPolicyOn(RedisClient& client, std::chrono::milliseconds timeout) {
    client.Send(
        RedisCommand::Format({"CONFIG", "GET", "maxmemory-policy"}), timeout,
        [warnings = warnings_,
         endpoint = client.Endpoint()](const absl::StatusOr<RedisReply>& reply) {
          // CONFIG may be refused (ACL, rename-command) or Redis may be down: nothing to say.
          if (!reply.ok() || !reply->is_array() || reply->elements().size() != 2) return;
          const std::string& policy = reply->elements()[1].str();
          if (!policy.starts_with("allkeys-") && !policy.starts_with("volatile-")) return;
          std::string warning = absl::StrCat(
              "redis ", endpoint, " has maxmemory-policy ", policy,
              ": under memory pressure it may evict live limiter keys, which silently resets "
              "their limits; use noeviction (docs/redis.md)");
          spdlog::warn("{}", warning);
          absl::MutexLock lock(&warnings->mu);
          // A primary may be told twice (at start and as it is installed): one warning each.
          if (std::find(warnings->list.begin(), warnings->list.end(), warning) ==
              warnings->list.end()) {
            warnings->list.push_back(std::move(warning));
          }
        });
  }

  const RedisStoreOptions options_;
  const RedisKeyScheme keys_;
  std::shared_ptr<RedisRouter> router_;
  ScriptRunner runner_;
  // Shared with the eviction-policy callback, which may complete after the store is gone.
  std::shared_ptr<WarningList> warnings_;
  internal::RedisLeaseCalls lease_calls_;
};

}  // namespace

internal::LeaseSource* LeaseSourceOf(RedisStore& store) {
  return dynamic_cast<internal::LeaseSource*>(&store);
}

absl::StatusOr<std::unique_ptr<RedisStore>> RedisStore::Create(const RedisStoreOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(StoreUrl url, ParseStoreUrl(options.url));
  if (!url.is_redis()) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis store: url must be redis:// or rediss://, got ", url.Redacted()));
  }
  if (options.command_timeout <= std::chrono::milliseconds::zero() ||
      options.connect_timeout <= std::chrono::milliseconds::zero()) {
    return absl::InvalidArgumentError("redis store: timeouts must be positive");
  }
  SLUICE_ASSIGN_OR_RETURN(RedisKeyScheme keys, RedisKeyScheme::Create(options.key_prefix));
  SLUICE_ASSIGN_OR_RETURN(RedisEndpoint endpoint, RedisEndpointFromUrl(url));
  RedisClientOptions client_options{.endpoint = std::move(endpoint),
                                    .command_timeout = options.command_timeout,
                                    .connect_timeout = options.connect_timeout,
                                    .connections = options.connections,
                                    .io_threads = 1};
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RedisRouter> router, CreateRedisRouter(client_options));
  // The URL's timeout_ms overrides the option in the client; the runner's deadline follows it.
  RedisStoreOptions effective = options;
  if (url.command_timeout.has_value()) effective.command_timeout = *url.command_timeout;
  if (url.connect_timeout.has_value()) effective.connect_timeout = *url.connect_timeout;
  if (url.kind == StoreUrl::Kind::kRedisCluster) effective.cluster = true;
  if (url.min_replicas > 0) effective.min_replicas = url.min_replicas;
  if (!url.functions) effective.use_functions = false;
  if (url.min_replicas_timeout != StoreUrl{}.min_replicas_timeout) {
    effective.min_replicas_timeout = url.min_replicas_timeout;
  }
  if (effective.min_replicas > 0 && effective.min_replicas_timeout >= effective.command_timeout) {
    // WAIT must answer before the call's deadline, or every durable call would time out.
    return absl::InvalidArgumentError(absl::StrCat(
        "redis store: min_replicas_timeout_ms (", effective.min_replicas_timeout.count(),
        ") must be below the command timeout (", effective.command_timeout.count(), "ms)"));
  }
  auto store = std::make_unique<RedisStoreImpl>(effective, std::move(keys), std::move(router));
  store->Start();
  if (url.lease) {
    // The lease store in front leases through the store's own lease side (docs/redis.md, "Leases").
    internal::LeaseSource* source = LeaseSourceOf(*store);
    return internal::WithLeases(std::move(store), *source,
                                internal::LeaseOptionsFromUrl(url, options.clock));
  }
  return store;
}

}  // namespace sluice
