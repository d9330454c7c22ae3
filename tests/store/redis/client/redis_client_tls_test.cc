// RedisClient over TLS (rediss://) against redis-server's tls-port, with a CA and certificates
// made by the openssl command line at test time (MakeTestCertificates()). Skipped when openssl or a
// TLS-capable redis-server is missing, except in CI, where that fails.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "src/store/redis/client/redis_client.h"
#include "tests/store/redis/client/redis_client_test_util.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/skip_or_fail.h"
#include "tests/testing/test_certificates.h"

namespace sluice {
namespace {

using ::sluice::testing::Connect;
using ::sluice::testing::EndpointOf;
using ::sluice::testing::FreeLoopbackPort;
using ::sluice::testing::RedisServer;
using ::testing::HasSubstr;

namespace fs = std::filesystem;

class RedisClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("sluice-tls-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    if (!testing::MakeTestCertificates(dir_)) {
      SLUICE_SKIP_OR_FAIL("openssl could not make test certificates");
    }
    absl::StatusOr<int> tls_port = FreeLoopbackPort();
    ASSERT_TRUE(tls_port.ok());
    tls_port_ = *tls_port;
    absl::StatusOr<std::unique_ptr<RedisServer>> server =
        RedisServer::Start({.config = {{"tls-port", std::to_string(tls_port_)},
                                       {"tls-cert-file", Path("server.pem")},
                                       {"tls-key-file", Path("server.key")},
                                       {"tls-ca-cert-file", Path("ca.pem")},
                                       {"tls-auth-clients", "optional"}}});
    if (!server.ok()) {
      SLUICE_SKIP_OR_FAIL("redis-server without TLS support: " + server.status().ToString());
    }
    server_ = *std::move(server);
  }

  void TearDown() override {
    server_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  RedisClientOptions Options(const std::string& query, const std::string& host = "127.0.0.1") {
    absl::StatusOr<StoreUrl> url =
        ParseStoreUrl("rediss://" + host + ":" + std::to_string(tls_port_) + query);
    EXPECT_TRUE(url.ok()) << url.status();
    RedisClientOptions options{.endpoint = EndpointOf(url.ok() ? *url : StoreUrl{})};
    options.connect_timeout = std::chrono::seconds(5);
    return options;
  }

  fs::path dir_;
  int tls_port_ = 0;
  std::unique_ptr<RedisServer> server_;
};

TEST_F(RedisClientTlsTest, VerifiesTheServerAgainstTheCa) {
  std::unique_ptr<RedisClient> client = Connect(Options("?tls_ca_file=" + Path("ca.pem")));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
  ASSERT_TRUE(client->SendSync({"SET", "k", "over tls"}).ok());
  EXPECT_EQ(client->SendSync({"GET", "k"})->str(), "over tls");
}

TEST_F(RedisClientTlsTest, VerifiesHostNamesAndSendsSni) {
  std::unique_ptr<RedisClient> client =
      Connect(Options("?tls_ca_file=" + Path("ca.pem"), "localhost"));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
}

TEST_F(RedisClientTlsTest, RejectsACertificateForAnotherName) {
  absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(
      Options("?tls_ca_file=" + Path("ca.pem") + "&tls_server_name=redis.example.com"));
  ASSERT_TRUE(client.ok());
  const absl::Status connected = (*client)->WaitForConnection(std::chrono::milliseconds(1500));
  EXPECT_EQ(connected.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(connected.message(), HasSubstr("TLS handshake failed"));
}

TEST_F(RedisClientTlsTest, RejectsAnUntrustedServerByDefault) {
  // No tls_ca_file: the system's CAs do not know our test CA.
  absl::StatusOr<std::unique_ptr<RedisClient>> client = RedisClient::Create(Options(""));
  ASSERT_TRUE(client.ok());
  const absl::Status connected = (*client)->WaitForConnection(std::chrono::milliseconds(1500));
  EXPECT_EQ(connected.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(connected.message(), HasSubstr("certificate verify failed"));
}

TEST_F(RedisClientTlsTest, VerificationCanBeDisabled) {
  std::unique_ptr<RedisClient> client = Connect(Options("?tls_verify=false"));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
}

TEST_F(RedisClientTlsTest, PresentsAClientCertificate) {
  // A second server that insists on client certificates.
  absl::StatusOr<int> port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  absl::StatusOr<std::unique_ptr<RedisServer>> strict =
      RedisServer::Start({.config = {{"tls-port", std::to_string(*port)},
                                     {"tls-cert-file", Path("server.pem")},
                                     {"tls-key-file", Path("server.key")},
                                     {"tls-ca-cert-file", Path("ca.pem")},
                                     {"tls-auth-clients", "yes"}}});
  ASSERT_TRUE(strict.ok()) << strict.status();
  tls_port_ = *port;
  std::unique_ptr<RedisClient> client =
      Connect(Options("?tls_ca_file=" + Path("ca.pem") + "&tls_cert_file=" + Path("client.pem") +
                      "&tls_key_file=" + Path("client.key")));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(*client->SendSync({"PING"}), RedisReply::Status("PONG"));
  // Without the certificate the server refuses the handshake.
  absl::StatusOr<std::unique_ptr<RedisClient>> anonymous =
      RedisClient::Create(Options("?tls_ca_file=" + Path("ca.pem")));
  ASSERT_TRUE(anonymous.ok());
  EXPECT_FALSE((*anonymous)->WaitForConnection(std::chrono::milliseconds(1000)).ok());
}

TEST_F(RedisClientTlsTest, RefusesUnreadableTlsFilesAtCreation) {
  const absl::StatusOr<std::unique_ptr<RedisClient>> client =
      RedisClient::Create(Options("?tls_ca_file=/nonexistent/ca.pem"));
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("cannot load tls_ca_file /nonexistent/ca.pem"));
}

}  // namespace
}  // namespace sluice
