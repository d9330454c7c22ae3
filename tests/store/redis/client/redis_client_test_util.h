// Helpers shared by the RedisClient tests.
#ifndef SLUICE_TESTS_STORE_REDIS_CLIENT_REDIS_CLIENT_TEST_UTIL_H_
#define SLUICE_TESTS_STORE_REDIS_CLIENT_REDIS_CLIENT_TEST_UTIL_H_

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

#include "sluice/store_url.h"

#include "src/store/redis/client/redis_client.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"

namespace sluice::testing {

// Real time is used only as a watchdog: a wait that reaches it is a failure, not a result.
inline constexpr std::chrono::seconds kWatchdog{20};

using ReplyFuture = std::future<absl::StatusOr<RedisReply>>;

// A callback for RedisClient::Send() and the future it completes.
inline std::pair<RedisClient::ReplyCallback, ReplyFuture> Capture() {
  std::promise<absl::StatusOr<RedisReply>> promise;
  ReplyFuture future = promise.get_future();
  return {[p = std::move(promise)](absl::StatusOr<RedisReply> reply) mutable {
            p.set_value(std::move(reply));
          },
          std::move(future)};
}

// Waits for `future` under the watchdog; a stuck future fails the test.
inline absl::StatusOr<RedisReply> Await(ReplyFuture& future) {
  if (future.wait_for(kWatchdog) != std::future_status::ready) {
    ADD_FAILURE() << "watchdog: no reply within " << kWatchdog.count() << "s";
    return absl::DeadlineExceededError("watchdog");
  }
  return future.get();
}

// Options for a client of `server` (URL `url_suffix` appended, e.g. "/3").
inline RedisClientOptions OptionsFor(const RedisServer& server, std::string url_suffix = "") {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(server.Url() + url_suffix);
  EXPECT_TRUE(url.ok()) << url.status();
  return RedisClientOptions{.endpoint = EndpointOf(url.ok() ? *url : StoreUrl{})};
}

// Creates a client and waits until it is connected.
inline std::unique_ptr<RedisClient> Connect(const RedisClientOptions& options) {
  absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return nullptr;
  absl::Status connected = (*client)->WaitForConnection(kWatchdog);
  EXPECT_TRUE(connected.ok()) << connected;
  return *std::move(client);
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_STORE_REDIS_CLIENT_REDIS_CLIENT_TEST_UTIL_H_
