// clang-format off: the examples keep the line breaks of the header comments they must equal.
// Every `Example:` of the library's public headers, as code that compiles and, where it needs no
// server, runs. examples_in_sync_test checks that each header still shows exactly the lines kept
// here between its `// [include/...]` markers (leading spaces aside), so the two cannot drift.
#include <array>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

#include "sluice/clock.h"
#include "sluice/config.h"
#include "sluice/decision.h"
#include "sluice/failure_policy.h"
#include "sluice/key.h"
#include "sluice/limit.h"
#include "sluice/memory_store.h"
#include "sluice/open_store.h"
#include "sluice/redis_store.h"
#include "sluice/status_macros.h"
#include "sluice/store.h"
#include "sluice/store_url.h"
#include "sluice/store_wrapper.h"

// Not in an anonymous namespace: the examples that need a server are compiled, never called.
namespace sluice::docs {

using std::chrono_literals::operator""ms;

absl::Status ConfigExample() {
  // [include/sluice/config.h]
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<const RateLimitConfig> config,
                          LoadRateLimitConfig("/etc/sluice/config"));
  const DescriptorEntry entries[] = {{"remote_address", "10.0.0.1"}};
  if (std::optional<RuleMatch> match = config->Match("edge", entries)) {
    // match->rule->limits, match->counter_entries, match->stats_key ...
  }
  // [include/sluice/config.h]
  return absl::OkStatus();
}

absl::Status FailurePolicyExample(const RedisStoreOptions& options) {
  // [include/sluice/failure_policy.h]
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Store> redis, RedisStore::Create(options));
  std::unique_ptr<Store> store = WithFailurePolicy(
      std::move(redis), {.mode = FailureMode::kLocal, .expected_instances = 4});
  // [include/sluice/failure_policy.h]
  return absl::OkStatus();
}

absl::Status LimitExample() {
  // [include/sluice/limit.h]
  Limit per_user{.algorithm = Algorithm::kGcra, .limit = 100, .period = std::chrono::minutes(1),
                 .burst = 20};
  SLUICE_RETURN_IF_ERROR(ValidateLimit(per_user));
  // [include/sluice/limit.h]
  return absl::OkStatus();
}

absl::Status MemoryStoreExample() {
  // [include/sluice/memory_store.h]
  absl::StatusOr<std::unique_ptr<MemoryStore>> store =
      MemoryStore::Create({.max_entries = 1'000'000, .max_bytes = size_t{256} << 20});
  if (!store.ok()) return store.status();
  // [include/sluice/memory_store.h]
  return (*store)->Check("user:42", Limit{}).status();
}

absl::Status RedisStoreExample() {
  // [include/sluice/redis_store.h]
  absl::StatusOr<std::unique_ptr<RedisStore>> store =
      RedisStore::Create({.url = "redis://10.0.0.5:6379/0", .command_timeout = 15ms});
  if (!store.ok()) return store.status();
  // [include/sluice/redis_store.h]
  return absl::OkStatus();
}

// README.md, "One Redis, Sentinel, or Cluster".
absl::Status ReadmeRedisStoreExample() {
  // [README redis store]
  // The library and the middleware: the same URL in RedisStoreOptions.
  auto store = sluice::RedisStore::Create({.url = "redis-cluster://10.0.0.1:7000,10.0.0.2:7000",
                                           .command_timeout = std::chrono::milliseconds(15)});
  // [README redis store]
  return store.status();
}

absl::StatusOr<Decision> StatusMacrosExample(Store& store, std::string_view key,
                                             const Limit& limit) {
  // [include/sluice/status_macros.h]
  SLUICE_RETURN_IF_ERROR(ValidateLimit(limit));
  SLUICE_ASSIGN_OR_RETURN(Decision d, store.Check(key, limit, 1));
  // [include/sluice/status_macros.h]
  return d;
}

absl::Status OpenStoreExample() {
  // [include/sluice/open_store.h]
  SLUICE_ASSIGN_OR_RETURN(OpenedStore opened, OpenStore("redis://10.0.0.5:6379"));
  std::clog << "store: " << opened.description << "\n";  // never shows a password
  absl::StatusOr<Decision> d = opened.store->Check("user:42", Limit{.limit = 10});
  // [include/sluice/open_store.h]
  return d.status();
}

absl::StatusOr<Decision> StoreExample() {
  // [include/sluice/store.h]
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<MemoryStore> store, MemoryStore::Create({}));
  Limit per_user{.limit = 100, .period = std::chrono::minutes(1)};
  absl::StatusOr<Decision> d = store->Check("user:42", per_user);
  if (d.ok() && !d->allowed) { /* answer 429 */ }
  // [include/sluice/store.h]
  return d;
}

// [include/sluice/store_wrapper.h]
class CountingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::atomic<uint64_t> checks{0};
 protected:
  void Decide(std::span<const LimitCheck> batch, MultiDecisionCallback done) override {
    checks.fetch_add(batch.size(), std::memory_order_relaxed);
    DecideOn(inner(), batch, std::move(done));
  }
};
// [include/sluice/store_wrapper.h]

absl::StatusOr<std::string> StoreUrlExample() {
  // [include/sluice/store_url.h]
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://limiter:s3cret@10.0.0.5:6379/2");
  if (!url.ok()) return url.status();
  std::clog << "store: " << url->Redacted() << "\n";  // redis://limiter:***@10.0.0.5:6379/2
  // [include/sluice/store_url.h]
  return url->Redacted();
}

namespace {

TEST(HeaderExamples, ClockReadsEpochTime) {
  // [include/sluice/clock.h]
  Clock& clock = Clock::Real();
  std::chrono::microseconds now = clock.EpochNow();
  // [include/sluice/clock.h]
  EXPECT_GT(now, std::chrono::hours(24 * 365 * 50));  // after 2020
}

TEST(HeaderExamples, KeyTagsEveryLimitOfOneUser) {
  // [include/sluice/key.h]
  // Every limit of one user shares the tag, so a multi-limit check is one slot on a cluster.
  const std::array<std::string_view, 2> parts = {"GET /orders", "burst"};
  std::string key = TaggedKey("user:42", JoinKeyComponents(parts));
  // key == "{user:42}GET /orders:burst"
  KeyParts split = SplitKey(key);  // {.tag = "user:42", .name = "GET /orders:burst", .tagged}
  // [include/sluice/key.h]
  EXPECT_EQ(key, "{user:42}GET /orders:burst");
  EXPECT_EQ(split.tag, "user:42");
  EXPECT_EQ(split.name, "GET /orders:burst");
}

TEST(HeaderExamples, ConfigLoadsOrReportsAMissingDirectory) {
  const absl::Status status = ConfigExample();
  EXPECT_TRUE(status.ok() || absl::IsNotFound(status)) << status;
}

TEST(HeaderExamples, LimitIsValid) { EXPECT_TRUE(LimitExample().ok()); }

TEST(HeaderExamples, MemoryStoreIsCreated) { EXPECT_TRUE(MemoryStoreExample().ok()); }

TEST(HeaderExamples, StatusMacrosPropagateAnInvalidLimit) {
  absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create({});
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(StatusMacrosExample(**store, "k", Limit{}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(StatusMacrosExample(**store, "k", Limit{.limit = 0}).status()));
}

TEST(HeaderExamples, StoreAllowsTheFirstRequest) {
  absl::StatusOr<Decision> d = StoreExample();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 99);
}

TEST(HeaderExamples, StoreWrapperForwardsAndCounts) {
  std::unique_ptr<MemoryStore> memory = MemoryStore::Create({}).value();
  CountingStore counting(*memory);
  EXPECT_TRUE(counting.Check("user:42", Limit{.limit = 1}).value().allowed);
  EXPECT_FALSE(counting.Check("user:42", Limit{.limit = 1}).value().allowed);
  EXPECT_EQ(counting.checks.load(), 2u);
  EXPECT_EQ(counting.Name(), "memory");
}

TEST(HeaderExamples, StoreUrlRedactsThePassword) {
  absl::StatusOr<std::string> redacted = StoreUrlExample();
  ASSERT_TRUE(redacted.ok()) << redacted.status();
  EXPECT_EQ(*redacted, "redis://limiter:***@10.0.0.5:6379/2");
}

}  // namespace
}  // namespace sluice::docs
