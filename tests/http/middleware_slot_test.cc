// Tests that the middleware's keys keep a multi-limit request on one Redis Cluster slot: the
// identity is the tag of every key of a request (docs/keys.md), whatever the algorithms, the
// identity's bytes or the key prefix. Built with the Redis store, whose key scheme it applies.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "sluice/http/middleware.h"
#include "sluice/key.h"
#include "sluice/memory_store.h"
#include "sluice/store_wrapper.h"

#include "src/store/redis/redis_keys.h"
#include "tests/http/http_test_util.h"
#include "tests/testing/manual_clock.h"

namespace sluice::http {
namespace {

using ::sluice::http::testing::Rules;
using ::sluice::http::testing::Send;
using ::sluice::http::testing::TestRequest;

// Store that keeps the checks of every call, to see which keys one request uses together.
class CallRecordingStore final : public StoreWrapper {
 public:
  explicit CallRecordingStore(Store& target) : StoreWrapper(target) {}

  std::vector<std::vector<LimitCheck>> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  std::string_view Name() const override { return "call-recording"; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    Record({checks.begin(), checks.end()});
    DecideOn(inner(), checks, std::move(done));
  }

 private:
  void Record(std::vector<LimitCheck> checks) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(checks));
  }

  mutable absl::Mutex mu_;
  std::vector<std::vector<LimitCheck>> calls_ ABSL_GUARDED_BY(mu_);
};

// Verifies that the limits of one request share their tag, and so one Redis Cluster slot: a
// multi-limit request stays one atomic CheckAll on a cluster.
TEST(MiddlewareKeys, MultiLimitRequestKeysShareOneClusterSlot) {
  sluice::testing::ManualClock clock;
  std::unique_ptr<MemoryStore> memory = MemoryStore::Create({.clock = &clock}).value();
  constexpr std::string_view kRules = R"(
area: shop
global:
  limits: [{name: global, limit: 1000, period: 1m, algorithm: gcra, burst: 10}]
routes:
  - name: orders
    path: /api/orders/{id}
    limits:
      - {name: burst, limit: 100, period: 1s, algorithm: sliding_window}
      - {name: hourly, limit: 1000, period: 1h}
      - {name: log, limit: 100, period: 1m, algorithm: sliding_log}
      - {name: bucket, limit: 100, period: 1m, algorithm: token_bucket, burst: 5}
)";
  CallRecordingStore calls(*memory);
  MiddlewareOptions options;
  options.store = &calls;
  options.config = Rules(kRules);
  options.clock = &clock;
  options.authenticate = [](const RequestView& r) -> std::optional<Principal> {
    std::optional<std::string_view> user = r.Header("X-User");
    if (!user) return std::nullopt;
    return Principal{.id = std::string(*user), .tier = {}};
  };
  std::unique_ptr<Middleware> middleware = Middleware::Create(std::move(options)).value();
  const std::vector<std::string> users = {
      "alice", "a}b", "a\\", "{x}", std::string(300, 'u'), std::string("nul\0\r\n", 6)};
  for (const std::string& user : users) {
    Send(*middleware, TestRequest{.method = "GET",
                                  .path = "/api/orders/1",
                                  .peer = "192.0.2.7",
                                  .headers = {{"X-User", user}}});
  }
  Send(*middleware, TestRequest{.method = "GET", .path = "/api/orders/1", .peer = "2001:db8::1"});

  const std::vector<std::vector<LimitCheck>> recorded = calls.calls();
  ASSERT_EQ(recorded.size(), users.size() + 1);
  for (const std::string_view prefix : {kDefaultKeyPrefix, std::string_view("p:")}) {
    const RedisKeyScheme scheme = RedisKeyScheme::Create(prefix).value();
    for (const std::vector<LimitCheck>& checks : recorded) {
      ASSERT_EQ(checks.size(), 5u);
      const std::string_view tag = SplitKey(checks[0].key).tag;
      const uint16_t slot =
          ClusterHashSlot(scheme.StateKey(checks[0].key, checks[0].limit.algorithm));
      for (const LimitCheck& check : checks) {
        EXPECT_TRUE(SplitKey(check.key).tagged) << check.key;
        EXPECT_EQ(SplitKey(check.key).tag, tag) << check.key;
        const std::string redis_key = scheme.StateKey(check.key, check.limit.algorithm);
        EXPECT_EQ(ClusterHashSlot(redis_key), slot) << redis_key;
      }
    }
  }
}

}  // namespace
}  // namespace sluice::http
