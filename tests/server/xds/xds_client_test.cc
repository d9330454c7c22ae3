// XdsClient against a management server of our own (test_management_server.h): subscribing,
// ACK and NACK, re-subscribing after the server went away, the node and headers, TLS, and Stop().
#include "src/server/xds/xds_client.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <unistd.h>

#include "sluice/clock.h"

#include "tests/server/xds/test_management_server.h"
#include "tests/testing/skip_or_fail.h"
#include "tests/testing/test_certificates.h"

namespace sluice::server {
namespace {

namespace fs = std::filesystem;
namespace rlc = ::ratelimit::config::ratelimit::v3;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::LimitedDescriptor;
using testing::RateLimitResource;
using testing::RecordedRequest;
using testing::TestManagementServer;
using testing::XdsResponse;

constexpr milliseconds kDeadline{10'000};  // a watchdog only: every wait ends on its condition

// Polls `done` every 10 ms until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& done, milliseconds timeout = kDeadline) {
  const auto until = Clock::Real().Now() + timeout;
  while (!done()) {
    if (Clock::Real().Now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// What the client applied and refused.
struct Applied {
  mutable std::mutex mu;
  std::shared_ptr<const RateLimitConfig> config;
  std::string origin;
  int applies = 0;
  int rejects = 0;
  std::string last_reject;

  XdsClientCallbacks Callbacks() {
    return XdsClientCallbacks{
        .apply =
            [this](const std::string& o, std::shared_ptr<const RateLimitConfig> c) {
              std::lock_guard lock(mu);
              config = std::move(c);
              origin = o;
              ++applies;
            },
        .reject =
            [this](const absl::Status& why) {
              std::lock_guard lock(mu);
              ++rejects;
              last_reject = std::string(why.message());
            }};
  }
  std::string Origin() const {
    std::lock_guard lock(mu);
    return origin;
  }
  bool HasDomain(const std::string& domain) const {
    std::lock_guard lock(mu);
    return config != nullptr && config->HasDomain(domain);
  }
  int Rejects() const {
    std::lock_guard lock(mu);
    return rejects;
  }
};

XdsSettings FastSettings(const std::string& url) {
  return XdsSettings{.server_url = url,
                     .node_id = "test-node",
                     .connect_retry_interval = milliseconds(200),
                     .backoff_initial = milliseconds(50),
                     .backoff_max = milliseconds(200),
                     .backoff_factor = 2};
}

std::unique_ptr<XdsClient> StartClient(const XdsSettings& settings, Applied& applied) {
  absl::StatusOr<std::unique_ptr<XdsClient>> client =
      XdsClient::Create(settings, applied.Callbacks());
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return nullptr;
  (*client)->Start();
  return *std::move(client);
}

// The requests answering the response of `nonce`.
std::vector<RecordedRequest> AnswersTo(const std::vector<RecordedRequest>& requests,
                                       const std::string& nonce) {
  std::vector<RecordedRequest> out;
  for (const RecordedRequest& r : requests) {
    if (r.request.response_nonce() == nonce) out.push_back(r);
  }
  return out;
}

bool Answered(const TestManagementServer& server, const std::string& nonce) {
  return server.WaitFor([&](const auto& r) { return !AnswersTo(r, nonce).empty(); }, kDeadline);
}

TEST(XdsClient, ServesTheFirstConfigAndAcksIt) {
  TestManagementServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Push(XdsResponse("v1", {RateLimitResource("r1", "edge", {LimitedDescriptor("k", 5)})}));
  Applied applied;
  auto client = StartClient(FastSettings(server.address()), applied);
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("edge"); }));
  EXPECT_EQ(applied.Origin(), "xds " + server.address() + " version v1");

  ASSERT_TRUE(Answered(server, "n1"));
  const std::vector<RecordedRequest> requests = server.Requests();
  // The first request subscribes: node and type URL, no version, no nonce.
  EXPECT_EQ(requests[0].request.node().id(), "test-node");
  EXPECT_EQ(requests[0].request.type_url(),
            "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig");
  EXPECT_EQ(requests[0].request.version_info(), "");
  EXPECT_EQ(requests[0].request.response_nonce(), "");
  // The ACK: the version and nonce of the response, no error.
  const RecordedRequest ack = AnswersTo(requests, "n1").front();
  EXPECT_EQ(ack.request.version_info(), "v1");
  EXPECT_FALSE(ack.request.has_error_detail());
  const XdsClientStats stats = client->Stats();
  EXPECT_EQ(stats.acks, 1u);
  EXPECT_EQ(stats.nacks, 0u);
  EXPECT_EQ(stats.version, "v1");
  EXPECT_TRUE(stats.connected);
}

// Verifies an update is applied within a second of the push, and a domain left out is gone.
TEST(XdsClient, AppliesAnUpdateWithinASecondAndReplacesTheWholeConfig) {
  TestManagementServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Push(XdsResponse("v1", {RateLimitResource("r1", "edge", {LimitedDescriptor("k", 5)}),
                                 RateLimitResource("r2", "old", {LimitedDescriptor("k", 5)})}));
  Applied applied;
  auto client = StartClient(FastSettings(server.address()), applied);
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("old"); }));

  const auto pushed = Clock::Real().Now();
  server.Push(XdsResponse("v2", {RateLimitResource("r1", "edge", {LimitedDescriptor("k", 9)}),
                                 RateLimitResource("r3", "new", {LimitedDescriptor("k", 5)})}));
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("new"); }, milliseconds(1000)));
  EXPECT_LT(Clock::Real().Now() - pushed, milliseconds(1000));
  EXPECT_FALSE(applied.HasDomain("old"));
  EXPECT_TRUE(applied.HasDomain("edge"));
  ASSERT_TRUE(Answered(server, "n2"));
  EXPECT_EQ(AnswersTo(server.Requests(), "n2").front().request.version_info(), "v2");
}

// Verifies a response that does not validate is NACKed with why, and the previous config stays.
TEST(XdsClient, NacksAnInvalidUpdateAndKeepsThePreviousConfig) {
  TestManagementServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Push(XdsResponse("v1", {RateLimitResource("r1", "edge", {LimitedDescriptor("k", 5)})}));
  Applied applied;
  auto client = StartClient(FastSettings(server.address()), applied);
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("edge"); }));

  // UNKNOWN is the proto's unset unit: refused, as the reference refuses it.
  server.Push(XdsResponse(
      "v2", {RateLimitResource("bad", "other", {LimitedDescriptor("k", 5, rlc::UNKNOWN)})}));
  ASSERT_TRUE(Answered(server, "n2"));
  const RecordedRequest nack = AnswersTo(server.Requests(), "n2").front();
  EXPECT_EQ(nack.request.version_info(), "v1");  // the last version applied
  ASSERT_TRUE(nack.request.has_error_detail());
  EXPECT_THAT(nack.request.error_detail().message(), HasSubstr("xds:bad"));
  EXPECT_THAT(nack.request.error_detail().message(),
              HasSubstr("invalid rate limit unit 'UNKNOWN'"));
  EXPECT_EQ(applied.Rejects(), 1);
  EXPECT_TRUE(applied.HasDomain("edge"));
  EXPECT_FALSE(applied.HasDomain("other"));

  // A resource of another type is refused too.
  auto wrong_type = XdsResponse("v3", {});
  wrong_type.add_resources()->PackFrom(nack.request);
  server.Push(wrong_type);
  ASSERT_TRUE(Answered(server, "n3"));
  const RecordedRequest nack2 = AnswersTo(server.Requests(), "n3").front();
  EXPECT_EQ(nack2.request.version_info(), "v1");
  EXPECT_THAT(nack2.request.error_detail().message(), HasSubstr("DiscoveryRequest"));
  EXPECT_TRUE(applied.HasDomain("edge"));
  EXPECT_EQ(client->Stats().nacks, 2u);
}

// Verifies the client keeps its config while the server is away, and subscribes again (with the
// node) once it is back on the same port.
TEST(XdsClient, SubscribesAgainAfterTheServerRestarts) {
  TestManagementServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Push(XdsResponse("v1", {RateLimitResource("r1", "edge", {LimitedDescriptor("k", 5)})}));
  Applied applied;
  auto client = StartClient(FastSettings(server.address()), applied);
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("edge"); }));

  server.Stop();
  ASSERT_TRUE(Eventually([&] { return client->Stats().stream_failures >= 1; }));
  EXPECT_TRUE(applied.HasDomain("edge"));  // still serving the last config

  server.Push(XdsResponse("v2", {RateLimitResource("r1", "back", {LimitedDescriptor("k", 5)})}));
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("back"); }));
  const std::vector<RecordedRequest> requests = server.Requests();
  ASSERT_GE(requests.back().stream, 2);
  for (const RecordedRequest& r : requests) {
    if (r.stream >= 2 && r.request.response_nonce().empty()) {
      EXPECT_EQ(r.request.node().id(), "test-node");  // a new subscription
    }
  }
  EXPECT_GE(client->Stats().streams, 2u);
}

TEST(XdsClient, SendsNodeMetadataAndAdditionalHeaders) {
  TestManagementServer server;
  ASSERT_TRUE(server.Start().ok());
  XdsSettings settings = FastSettings(server.address());
  settings.node_metadata = {{"zone", "eu-1"}, {"role", "rl"}};
  settings.additional_headers = {{"x-tenant", "blue"}, {"authorization", "Bearer t"}};
  Applied applied;
  auto client = StartClient(settings, applied);
  ASSERT_TRUE(server.WaitFor([](const auto& r) { return !r.empty(); }, kDeadline));
  const RecordedRequest first = server.Requests().front();
  const auto& fields = first.request.node().metadata().fields();
  ASSERT_EQ(fields.count("zone"), 1u);
  EXPECT_EQ(fields.at("zone").string_value(), "eu-1");
  EXPECT_EQ(fields.at("role").string_value(), "rl");
  EXPECT_EQ(first.request.node().user_agent_name(), "sluiced");
  ASSERT_EQ(first.metadata.count("x-tenant"), 1u);
  EXPECT_EQ(first.metadata.find("x-tenant")->second, "blue");
  EXPECT_EQ(first.metadata.find("authorization")->second, "Bearer t");
}

// Verifies Stop() is prompt both with a stream open and while no server answers.
TEST(XdsClient, StopsWithinASecond) {
  TestManagementServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Push(XdsResponse("v1", {RateLimitResource("r1", "edge", {LimitedDescriptor("k", 5)})}));
  Applied applied;
  auto connected = StartClient(FastSettings(server.address()), applied);
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("edge"); }));
  auto started = Clock::Real().Now();
  connected->Stop();
  EXPECT_LT(Clock::Real().Now() - started, milliseconds(1000));

  server.Stop();  // nobody listens on its port now
  XdsSettings away = FastSettings(server.address());
  away.connect_retry_interval = std::chrono::seconds(30);
  away.backoff_initial = std::chrono::seconds(30);
  Applied nothing;
  auto waiting = StartClient(away, nothing);
  started = Clock::Real().Now();
  waiting->Stop();
  EXPECT_LT(Clock::Real().Now() - started, milliseconds(1000));
}

class XdsClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("sluice-xds-tls-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    if (!testing::MakeTestCertificates(dir_))
      SLUICE_SKIP_OR_FAIL("openssl could not make certificates");
    server_ = std::make_unique<TestManagementServer>(
        testing::ManagementServerTls{.cert_file = (dir_ / "server.pem").string(),
                                     .key_file = (dir_ / "server.key").string(),
                                     .client_ca_file = (dir_ / "ca.pem").string()});
    ASSERT_TRUE(server_->Start().ok());
    server_->Push(
        XdsResponse("v1", {RateLimitResource("r1", "edge", {LimitedDescriptor("k", 5)})}));
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  XdsSettings Tls(const std::string& san) {
    XdsSettings s = FastSettings(server_->address());
    s.use_tls = true;
    s.server_tls_ca = (dir_ / "ca.pem").string();
    s.client_tls_cert = (dir_ / "client.pem").string();
    s.client_tls_key = (dir_ / "client.key").string();
    s.server_tls_san = san;
    return s;
  }

  fs::path dir_;
  std::unique_ptr<TestManagementServer> server_;
};

TEST_F(XdsClientTlsTest, SubscribesOverMutualTls) {
  Applied applied;
  auto client = StartClient(Tls(/*san=*/"localhost"), applied);
  ASSERT_TRUE(Eventually([&] { return applied.HasDomain("edge"); }));
}

TEST_F(XdsClientTlsTest, RefusesAServerWithoutTheExpectedName) {
  Applied applied;
  auto client = StartClient(Tls(/*san=*/"elsewhere.example"), applied);
  // A connection that could not be made is counted after connect_retry_interval.
  ASSERT_TRUE(Eventually([&] { return client->Stats().stream_failures >= 1; }));
  EXPECT_FALSE(applied.HasDomain("edge"));
  EXPECT_TRUE(server_->Requests().empty());
}

TEST_F(XdsClientTlsTest, CreateRefusesACertificateWithoutItsKey) {
  XdsSettings s = Tls("localhost");
  s.client_tls_key.clear();
  Applied applied;
  EXPECT_TRUE(absl::IsInvalidArgument(XdsClient::Create(s, applied.Callbacks()).status()));
  s = Tls("localhost");
  s.server_tls_ca = (dir_ / "missing.pem").string();
  EXPECT_THAT(std::string(XdsClient::Create(s, applied.Callbacks()).status().message()),
              HasSubstr("CONFIG_GRPC_XDS_SERVER_TLS_CACERT"));
}

}  // namespace
}  // namespace sluice::server
