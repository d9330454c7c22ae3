#include "src/server/config_reloader.h"

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/util/mutex.h"

namespace sluice::server {
namespace {

using ::testing::ElementsAre;

// Real time only as a watchdog: every wait below ends at once unless the reloader is broken.
constexpr std::chrono::seconds kWatchdog(30);

// A loader that blocks until released, one load at a time; counts loads.
class SlowLoader {
 public:
  // Returns the load function: it signals `started`, then waits for Release().
  ConfigReloader::Load Fn() {
    return [self = shared_] {
      std::shared_future<void> go;
      {
        internal::MutexLock lock(&self->mu);
        ++self->loads;
        self->started.set_value();
        self->started = std::promise<void>();
        go = self->go;
      }
      go.wait();
      return ConfigReloader::Result(absl::InvalidArgumentError("fake"));
    };
  }
  // A future ready when the next load starts.
  std::future<void> NextStart() {
    internal::MutexLock lock(&shared_->mu);
    return shared_->started.get_future();
  }
  // Lets the load in progress (and every later one) finish.
  void Release() { shared_->release.set_value(); }
  int loads() {
    internal::MutexLock lock(&shared_->mu);
    return shared_->loads;
  }

 private:
  struct Shared {
    Shared() : go(release.get_future().share()) {}
    internal::Mutex mu;
    std::promise<void> release;
    std::shared_future<void> go;
    std::promise<void> started ABSL_GUARDED_BY(mu);
    int loads ABSL_GUARDED_BY(mu) = 0;
  };
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

// Records the reasons applied; a future ready once `n` were applied.
class Applied {
 public:
  ConfigReloader::Apply Fn() {
    return [this](const std::string& why, const ConfigReloader::Result& /*config*/) {
      internal::MutexLock lock(&mu_);
      whys_.push_back(why);
      if (whys_.size() == want_) done_.set_value();
    };
  }
  std::future<void> After(size_t n) {
    internal::MutexLock lock(&mu_);
    want_ = n;
    done_ = std::promise<void>();
    return done_.get_future();
  }
  std::vector<std::string> whys() {
    internal::MutexLock lock(&mu_);
    return whys_;
  }

 private:
  internal::Mutex mu_;
  std::vector<std::string> whys_ ABSL_GUARDED_BY(mu_);
  size_t want_ ABSL_GUARDED_BY(mu_) = 0;
  std::promise<void> done_ ABSL_GUARDED_BY(mu_);
};

// Verifies Request() returns while a load is in progress, and the requests made meanwhile
// coalesce into exactly one more load, applied with the latest reason.
TEST(ConfigReloader, RequestsDuringALoadCoalesceIntoOneMore) {
  SlowLoader loader;
  Applied applied;
  ConfigReloader reloader(loader.Fn(), applied.Fn());
  std::future<void> first = loader.NextStart();
  reloader.Request("first");
  ASSERT_EQ(first.wait_for(kWatchdog), std::future_status::ready);
  // The load is blocked: these return at once or the test never reaches Release().
  for (const char* why : {"a", "b", "c"}) reloader.Request(why);
  std::future<void> two = applied.After(2);
  loader.Release();
  ASSERT_EQ(two.wait_for(kWatchdog), std::future_status::ready);
  EXPECT_TRUE(reloader.Stop(kWatchdog));
  EXPECT_EQ(loader.loads(), 2);
  EXPECT_THAT(applied.whys(), ElementsAre("first", "c"));
}

// Verifies shutdown is bounded: a load that never finishes is abandoned, and its result is never
// applied even once it finishes after Stop().
TEST(ConfigReloader, StopAbandonsALoadInProgressAndNeverAppliesIt) {
  SlowLoader loader;
  Applied applied;
  // The load function's captures die with the abandoned thread's state: that tells us when the
  // thread is gone.
  auto thread_gone = std::make_shared<std::promise<void>>();
  std::future<void> gone_future = thread_gone->get_future();
  auto gone = std::shared_ptr<void>(nullptr, [thread_gone](void*) { thread_gone->set_value(); });
  ConfigReloader::Load slow = loader.Fn();
  auto reloader = std::make_unique<ConfigReloader>([slow, gone] { return slow(); }, applied.Fn());
  gone.reset();
  std::future<void> started = loader.NextStart();
  reloader->Request("slow");
  ASSERT_EQ(started.wait_for(kWatchdog), std::future_status::ready);
  EXPECT_FALSE(reloader->Stop(std::chrono::milliseconds(1)));
  reloader->Request("after stop");  // Ignored.
  reloader.reset();
  loader.Release();
  ASSERT_EQ(gone_future.wait_for(kWatchdog), std::future_status::ready);
  EXPECT_TRUE(applied.whys().empty());
  EXPECT_EQ(loader.loads(), 1);
}

// Verifies an idle reloader stops at once, and loads asked for before are applied in order.
TEST(ConfigReloader, AppliesEachRequestAndStopsWhenIdle) {
  int loads = 0;
  Applied applied;
  ConfigReloader reloader(
      [&loads] {
        ++loads;
        return ConfigReloader::Result(std::shared_ptr<const RateLimitConfig>());
      },
      applied.Fn());
  std::future<void> one = applied.After(1);
  reloader.Request("one");
  ASSERT_EQ(one.wait_for(kWatchdog), std::future_status::ready);
  std::future<void> two = applied.After(2);
  reloader.Request("two");
  ASSERT_EQ(two.wait_for(kWatchdog), std::future_status::ready);
  EXPECT_TRUE(reloader.Stop(kWatchdog));
  EXPECT_TRUE(reloader.Stop(kWatchdog));
  EXPECT_EQ(loads, 2);
  EXPECT_THAT(applied.whys(), ElementsAre("one", "two"));
}

}  // namespace
}  // namespace sluice::server
