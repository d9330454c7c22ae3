// RedisClient authentication: requirepass, ACL users, password files, and clear refusals that
// never reveal the password.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "src/store/redis/client/redis_client.h"
#include "src/store/redis/client/redis_error.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"

namespace sluice {
namespace {

using ::sluice::testing::Connect;
using ::sluice::testing::EndpointOf;
using ::sluice::testing::kWatchdog;
using ::sluice::testing::RedisServer;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPassword[] = "s3cret-Pa55";
constexpr char kWrongPassword[] = "hunter2-not-it";

RedisClientOptions OptionsWithUrl(const std::string& url) {
  absl::StatusOr<StoreUrl> parsed = ParseStoreUrl(url);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return RedisClientOptions{.endpoint = EndpointOf(parsed.ok() ? *parsed : StoreUrl{})};
}

class RedisClientAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> server =
        RedisServer::Start({.config = {{"requirepass", kPassword}}});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    host_port_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  // Writes `content` to a file in the test's temporary directory and returns its path.
  std::string WriteFile(const std::string& name, const std::string& content) {
    const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) /
                                       (std::to_string(server_->port()) + "-" + name);
    std::ofstream(path) << content;
    return path.string();
  }

  std::unique_ptr<RedisServer> server_;
  std::string host_port_;
};

TEST_F(RedisClientAuthTest, AuthenticatesWithThePasswordFromTheUrl) {
  std::unique_ptr<RedisClient> client =
      Connect(OptionsWithUrl("redis://:" + std::string(kPassword) + "@" + host_port_));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
  EXPECT_THAT(client->Endpoint(), Not(HasSubstr(kPassword)));
}

TEST_F(RedisClientAuthTest, WrongPasswordIsRefusedClearlyWithoutRevealingIt) {
  absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(
      OptionsWithUrl("redis://:" + std::string(kWrongPassword) + "@" + host_port_));
  ASSERT_TRUE(client.ok());
  const absl::Status connected = (*client)->WaitForConnection(kWatchdog);
  EXPECT_EQ(connected.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(connected.message(), HasSubstr("AUTH failed: WRONGPASS"));
  EXPECT_THAT(connected.message(), Not(HasSubstr(kWrongPassword)));
  // Commands fail fast, carrying the reason.
  const absl::StatusOr<RedisReply> reply = (*client)->SendSync({"PING"});
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(reply.status().message(), HasSubstr("WRONGPASS"));
  EXPECT_THAT(reply.status().message(), Not(HasSubstr(kWrongPassword)));
}

TEST_F(RedisClientAuthTest, MissingPasswordIsReportedAsNoAuth) {
  absl::StatusOr<std::unique_ptr<RedisClient>> client =
      RedisClient::Create(OptionsWithUrl("redis://" + host_port_));
  ASSERT_TRUE(client.ok());
  const absl::Status connected = (*client)->WaitForConnection(kWatchdog);
  EXPECT_EQ(connected.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(connected.message(), HasSubstr("requires a password (NOAUTH"));
}

TEST_F(RedisClientAuthTest, AuthenticatesAsAnAclUser) {
  ASSERT_TRUE(
      server_->Command({"ACL", "SETUSER", "limiter", "on", ">lim-pass", "~sluice:*", "+@all"})
          .ok());
  std::unique_ptr<RedisClient> client =
      Connect(OptionsWithUrl("redis://limiter:lim-pass@" + host_port_));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->SendSync({"ACL", "WHOAMI"})->str(), "limiter");
  // The ACL's key pattern applies: proof that we are not the default user.
  EXPECT_TRUE(client->SendSync({"SET", "sluice:k", "1"})->is_status());
  const absl::StatusOr<RedisReply> denied = client->SendSync({"SET", "other", "1"});
  ASSERT_TRUE(denied.ok());
  EXPECT_TRUE(IsAuthError(*denied)) << denied->DebugString();
}

TEST_F(RedisClientAuthTest, WrongAclPasswordIsRefused) {
  ASSERT_TRUE(
      server_->Command({"ACL", "SETUSER", "limiter", "on", ">lim-pass", "~*", "+@all"}).ok());
  absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(
      OptionsWithUrl("redis://limiter:" + std::string(kWrongPassword) + "@" + host_port_));
  ASSERT_TRUE(client.ok());
  const absl::Status connected = (*client)->WaitForConnection(kWatchdog);
  EXPECT_EQ(connected.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(connected.message(), Not(HasSubstr(kWrongPassword)));
}

TEST_F(RedisClientAuthTest, ReadsThePasswordFromAFile) {
  const std::string file = WriteFile("password", std::string(kPassword) + "\n");
  std::unique_ptr<RedisClient> client =
      Connect(OptionsWithUrl("redis://" + host_port_ + "?password_file=" + file));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
}

TEST_F(RedisClientAuthTest, RefusesAMissingPasswordFileAtCreation) {
  const absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(
      OptionsWithUrl("redis://" + host_port_ + "?password_file=/nonexistent/sluice-pw"));
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("cannot read password_file /nonexistent"));
}

}  // namespace
}  // namespace sluice
