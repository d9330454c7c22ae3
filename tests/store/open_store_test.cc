// OpenStore(): each URL gives its store behind a failure policy; a bad URL or option changes
// nothing and says what is wrong; a Redis that is not there is waited for as the options say.
#include "sluice/open_store.h"

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sluice/memory_store.h"
#include "sluice/redis_store.h"

#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(OpenStore, MemoryIsAMemoryStoreBehindItsPolicy) {
  absl::StatusOr<OpenedStore> opened =
      OpenStore("memory", {.policy = {.mode = FailureMode::kDeny}, .memory = {.max_entries = 10}});
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_NE(dynamic_cast<MemoryStore*>(opened->backend), nullptr);
  EXPECT_EQ(&opened->store->inner(), opened->backend);
  EXPECT_THAT(opened->description, HasSubstr("at most 10 entries"));
  EXPECT_TRUE(opened->store->Check("k", Limit{.limit = 1}).value().allowed);
  EXPECT_FALSE(opened->store->Check("k", Limit{.limit = 1}).value().allowed);
}

TEST(OpenStore, BadUrlOrOptionIsInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(OpenStore("memcached://h").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(OpenStore("redis://h:1/0?nonsense=1").status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(OpenStore("memory", {.memory = {.max_entries = 0}}).status()));
}

TEST(OpenStore, RedisIsARedisStoreWithThePasswordHidden) {
  absl::StatusOr<std::unique_ptr<testing::RedisServer>> server = testing::RedisServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string url = absl::StrCat("redis://:s3cret@127.0.0.1:", (*server)->port());
  absl::StatusOr<OpenedStore> opened = OpenStore((*server)->Url(), {.key_prefix = "t:"});
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_NE(dynamic_cast<RedisStore*>(opened->backend), nullptr);
  EXPECT_TRUE(opened->store->Check("k", Limit{.limit = 1}).value().allowed);
  // The server has no password: AUTH fails, yet the store opens (start-up is not gated).
  absl::StatusOr<OpenedStore> with_password = OpenStore(url, {.startup_wait = {}});
  ASSERT_TRUE(with_password.ok()) << with_password.status();
  EXPECT_THAT(with_password->description, Not(HasSubstr("s3cret")));
}

TEST(OpenStore, StartupWaitMakesAnAbsentRedisAnError) {
  absl::StatusOr<std::unique_ptr<testing::RedisServer>> server = testing::RedisServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string url = (*server)->Url();
  server->reset();  // Stopped: nothing listens on its port now.
  absl::StatusOr<OpenedStore> gated =
      OpenStore(url, {.startup_wait = std::chrono::milliseconds(200)});
  EXPECT_TRUE(absl::IsUnavailable(gated.status())) << gated.status();
  // Without a wait the store opens and its checks fail per the policy.
  absl::StatusOr<OpenedStore> open = OpenStore(url, {.policy = {.mode = FailureMode::kAllow}});
  ASSERT_TRUE(open.ok()) << open.status();
  absl::StatusOr<Decision> d = open->store->Check("k", Limit{.limit = 1});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->from_fallback);
}

}  // namespace
}  // namespace sluice
