// The store's families on /metrics (src/server/store_gauges.h): rendered from a StoreState, and
// read from a real store chain. They live where the stores are wired, not in sluice_stats, so
// these tests link the stores and the metrics' own do not.
#include "src/server/store_gauges.h"

#include <string>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/open_store.h"

#include "src/server/observe/store_state.h"

namespace sluice::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Render(const StoreState& state) {
  std::string out;
  AppendStoreFamilies(state, out);
  return out;
}

TEST(StoreGauges, BreakerAndConnection) {
  const std::string text =
      Render(StoreState{.redis_connected = false, .breaker_open = true, .breaker_opens = 3});
  EXPECT_THAT(text, HasSubstr("sluice_redis_connected 0\n"));
  EXPECT_THAT(text, HasSubstr("sluice_store_breaker_open 1\n"));
  EXPECT_THAT(text, HasSubstr("sluice_store_breaker_opens_total 3\n"));
  EXPECT_THAT(text, Not(HasSubstr("sluice_redis_connects_total")));
  EXPECT_THAT(text, Not(HasSubstr("sluice_memory_store_entries")));
}

TEST(StoreGauges, ExportsTheStoresOwnCounters) {
  StoreState state{.redis_connected = true,
                   .breaker_closes = 2,
                   .redis = RedisStoreStats{.script_calls = 40,
                                            .noscript_resends = 1,
                                            .connects = 3,
                                            .connect_failures = 5,
                                            .disconnects = 2},
                   .memory = MemoryStoreStats{.entries = 7, .bytes = 504, .evicted = 9}};
  EXPECT_THAT(Render(state), Not(HasSubstr("sluice_lease_")));
  state.redis->leases = true;
  state.redis->lease.local_admits = 11;
  state.redis->lease.keys = 4;
  const std::string text = Render(state);
  EXPECT_THAT(text, HasSubstr("sluice_redis_connected 1\n"));
  EXPECT_THAT(text, HasSubstr("sluice_store_breaker_closes_total 2\n"));
  EXPECT_THAT(text, HasSubstr("sluice_redis_script_calls_total 40\n"));
  EXPECT_THAT(text, HasSubstr("sluice_redis_noscript_resends_total 1\n"));
  EXPECT_THAT(text, HasSubstr("sluice_redis_connects_total 3\n"));
  EXPECT_THAT(text, HasSubstr("sluice_redis_connect_failures_total 5\n"));
  EXPECT_THAT(text, HasSubstr("sluice_redis_disconnects_total 2\n"));
  EXPECT_THAT(text, HasSubstr("sluice_lease_local_admits_total 11\n"));
  EXPECT_THAT(text, HasSubstr("sluice_lease_keys 4\n"));
  EXPECT_THAT(text, HasSubstr("sluice_memory_store_entries 7\n"));
  EXPECT_THAT(text, HasSubstr("sluice_memory_store_bytes 504\n"));
  EXPECT_THAT(text, HasSubstr("sluice_memory_store_evicted_total 9\n"));
}

TEST(StoreGauges, ReadsTheMemoryStoreAndTheBreaker) {
  absl::StatusOr<OpenedStore> stores = OpenStore("memory");
  ASSERT_TRUE(stores.ok()) << stores.status();
  const StoreGauges gauges(*stores->store, stores->backend);
  const StoreState state = gauges.ReadStoreState();
  EXPECT_FALSE(state.redis.has_value());
  EXPECT_FALSE(state.redis_connected.has_value());
  ASSERT_TRUE(state.memory.has_value());
  std::string text;
  gauges.AppendPrometheus(text);
  EXPECT_THAT(text, HasSubstr("sluice_memory_store_entries 0\n"));
  EXPECT_THAT(text, HasSubstr("sluice_store_breaker_open 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("sluice_redis_connected")));
}

}  // namespace
}  // namespace sluice::server
