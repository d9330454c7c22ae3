// Health (src/server/health.h): the answer behind /healthcheck and grpc.health.v1.
#include "src/server/admin/health.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/config.h"
#include "sluice/memory_store.h"

#include "src/server/stats/metrics.h"
#include "tests/testing/faulty_store.h"
#include "tests/testing/manual_clock.h"

namespace sluice::server {
namespace {

using ::testing::ElementsAre;

class HealthTest : public ::testing::Test {
 protected:
  HealthTest() {
    main_ = MakeFaulty();
    per_second_ = MakeFaulty();
    service_ = std::make_unique<RateLimitService>(*main_, metrics_,
                                                  RateLimitServiceOptions{.clock = &clock_});
  }

  std::unique_ptr<testing::FaultyStore> MakeFaulty() {
    auto memory = MemoryStore::Create({.clock = &clock_});
    EXPECT_TRUE(memory.ok());
    return std::make_unique<testing::FaultyStore>(*std::move(memory));
  }

  void Load(const char* yaml) {
    const ConfigSource source{.name = "c.yaml", .content = yaml};
    auto config = ParseRateLimitConfig({&source, 1});
    ASSERT_TRUE(config.ok()) << config.status();
    service_->SetConfig(*config);
  }

  // Runs a check; the memory store answers inline.
  HealthResult Check(Health& health) {
    HealthResult out{.reason = "not completed"};
    int calls = 0;
    health.Check([&](HealthResult r) {
      ++calls;
      out = std::move(r);
    });
    EXPECT_EQ(calls, 1);
    return out;
  }

  testing::ManualClock clock_;
  Metrics metrics_;
  std::unique_ptr<testing::FaultyStore> main_;
  std::unique_ptr<testing::FaultyStore> per_second_;
  std::unique_ptr<RateLimitService> service_;
};

constexpr const char* kConfig =
    "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n";

// Verifies each reason, and that every store is probed: a per-second store that is down makes the
// service unhealthy even when the main store answers.
TEST_F(HealthTest, NeedsConfigAndEveryStore) {
  Health health(*service_, {main_.get(), per_second_.get()});
  EXPECT_EQ(Check(health).reason, "no_config");
  Load(kConfig);
  EXPECT_TRUE(Check(health).healthy);
  per_second_->Fail(absl::UnavailableError("per-second redis down"));
  HealthResult r = Check(health);
  EXPECT_FALSE(r.healthy);
  EXPECT_EQ(r.reason, "store_unavailable");
  EXPECT_EQ(r.message, "per-second redis down");
  per_second_->Heal();
  main_->Fail(absl::UnavailableError("main redis down"));
  EXPECT_EQ(Check(health).message, "main redis down");
}

// Verifies HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: a config naming no domain is not enough.
TEST_F(HealthTest, RequireDomainWantsADomain) {
  Health plain(*service_, {main_.get()});
  Health strict(*service_, {main_.get()}, HealthOptions{.require_domain = true});
  // No file at all: a config, but without a domain. (A file always names its domain.)
  auto empty = ParseRateLimitConfig(absl::Span<const ConfigSource>());
  ASSERT_TRUE(empty.ok()) << empty.status();
  service_->SetConfig(*empty);
  EXPECT_TRUE(Check(plain).healthy);
  EXPECT_EQ(Check(strict).reason, "no_domain");
  Load(kConfig);
  EXPECT_TRUE(Check(strict).healthy);
}

// Verifies the listener hears each change once, in order, SIGTERM at once and for good.
TEST_F(HealthTest, ListenerHearsChangesOnlyAndTerminationAtOnce) {
  Health health(*service_, {main_.get()});
  std::vector<bool> heard;
  health.OnChange([&heard](bool healthy) { heard.push_back(healthy); });
  Check(health);  // No config: the first state is a change.
  Check(health);
  Load(kConfig);
  Check(health);
  Check(health);
  main_->Fail(absl::UnavailableError("down"));
  Check(health);
  main_->Heal();
  Check(health);
  EXPECT_THAT(heard, ElementsAre(false, true, false, true));
  health.MarkTerminating();
  EXPECT_THAT(heard, ElementsAre(false, true, false, true, false));
  HealthResult r = Check(health);
  EXPECT_EQ(r.reason, "terminating");
  EXPECT_EQ(heard.size(), 5u);
  health.OnChange(nullptr);
  health.MarkTerminating();  // No listener: nothing to tell, nothing breaks.
}

}  // namespace
}  // namespace sluice::server
