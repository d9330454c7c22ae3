// GrpcServer over TLS and mutual TLS (the reference's GRPC_SERVER_USE_TLS, GRPC_SERVER_TLS_CERT,
// GRPC_SERVER_TLS_KEY, GRPC_CLIENT_TLS_CACERT), with certificates made at test time.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "gtest/gtest.h"
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "sluice/memory_store.h"

#include "src/server/grpc/grpc_server.h"
#include "src/server/grpc/rls_proto.h"
#include "src/server/stats/metrics.h"
#include "tests/testing/skip_or_fail.h"
#include "tests/testing/test_certificates.h"

namespace sluice::server {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class GrpcTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("sluice-grpc-tls-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    if (!testing::MakeTestCertificates(dir_))
      SLUICE_SKIP_OR_FAIL("openssl could not make certificates");
    auto memory = MemoryStore::Create({});
    ASSERT_TRUE(memory.ok());
    store_ = *std::move(memory);
    service_ = std::make_unique<RateLimitService>(*store_, metrics_, RateLimitServiceOptions{});
  }
  void TearDown() override { fs::remove_all(dir_); }

  void StartServer(bool require_client_certificate) {
    server_ = std::make_unique<GrpcServer>(
        GrpcServerOptions{
            .address = "127.0.0.1:0",
            .tls_cert_file = (dir_ / "server.pem").string(),
            .tls_key_file = (dir_ / "server.key").string(),
            .tls_client_ca_file = require_client_certificate ? (dir_ / "ca.pem").string() : ""},
        *service_);
    ASSERT_TRUE(server_->Start().ok());
  }

  grpc::Status Call(bool with_client_certificate) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = Read(dir_ / "ca.pem");
    if (with_client_certificate) {
      ssl.pem_private_key = Read(dir_ / "client.key");
      ssl.pem_cert_chain = Read(dir_ / "client.pem");
    }
    auto stub = envoy::service::ratelimit::v3::RateLimitService::NewStub(grpc::CreateChannel(
        "localhost:" + std::to_string(server_->port()), grpc::SslCredentials(ssl)));
    RateLimitRequest request;
    request.set_domain("edge");
    request.add_descriptors()->add_entries()->set_key("k");
    RateLimitResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub->ShouldRateLimit(&context, request, &response);
  }

  fs::path dir_;
  Metrics metrics_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<RateLimitService> service_;
  std::unique_ptr<GrpcServer> server_;
};

TEST_F(GrpcTlsTest, ServesOverTls) {
  StartServer(/*require_client_certificate=*/false);
  EXPECT_TRUE(Call(/*with_client_certificate=*/false).ok());
}

TEST_F(GrpcTlsTest, MutualTlsRefusesClientsWithoutACertificate) {
  StartServer(/*require_client_certificate=*/true);
  EXPECT_TRUE(Call(/*with_client_certificate=*/true).ok());
  EXPECT_FALSE(Call(/*with_client_certificate=*/false).ok());
}

}  // namespace
}  // namespace sluice::server
