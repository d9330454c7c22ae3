#include "src/server/grpc/grpc_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_posix.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "sluice/clock.h"

#include "src/net/tcp_listener.h"
#include "src/server/grpc/grpc_preface_gate.h"
#include "src/server/grpc/h2/grpc_h2_server.h"
#include "src/util/mutex.h"

namespace sluice::server {
namespace {

// Connections sluiced accepted and handed to gRPC, which closes them without telling: each is
// remembered by descriptor and socket inode, and counted open while that descriptor still names
// that socket (a reused descriptor names another inode).
class HandedConnections {
 public:
  void Add(int fd) {
    struct stat st {};
    if (fstat(fd, &st) == 0) open_.push_back({fd, st.st_ino});
  }

  // Forgets the closed ones once the list reaches `cap`; at most one sweep per 50 ms, so that a
  // flood at the cap costs a sweep per 50 ms rather than per connection.
  size_t Count(size_t cap) {
    if (open_.size() < cap) return open_.size();
    const std::chrono::steady_clock::time_point now = Clock::Real().Now();
    if (now - last_sweep_ < std::chrono::milliseconds(50)) return open_.size();
    last_sweep_ = now;
    std::erase_if(open_, [](const Handed& h) {
      struct stat st {};
      return fstat(h.fd, &st) != 0 || st.st_ino != h.inode || !S_ISSOCK(st.st_mode);
    });
    return open_.size();
  }

 private:
  struct Handed {
    int fd;
    ino_t inode;
  };
  std::vector<Handed> open_;
  std::chrono::steady_clock::time_point last_sweep_{};
};

// The address when sluiced can listen itself: plain TCP on an IP literal ("1.2.3.4:80",
// "[::1]:80"); nullopt otherwise.
std::optional<std::pair<std::string, uint16_t>> OwnListenAddress(const GrpcServerOptions& o) {
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) return std::nullopt;
  const size_t colon = o.address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(o.address).substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return std::nullopt;
  }
  std::string host = o.address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return std::make_pair(host, static_cast<uint16_t>(port));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat("grpc tls: cannot read ", path));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("grpc tls: empty or missing ", path));
  }
  return out;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const GrpcServerOptions& o) {
  if (o.tls_cert_file.empty() && o.tls_key_file.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadFile(o.tls_cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(o.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!o.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(o.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

struct GrpcServer::Impl {
  // --grpc-engine nghttp2: it serves instead of `server`.
  std::unique_ptr<h2::GrpcH2Server> h2;
  std::unique_ptr<grpc::Server> server;
  // When sluiced accepts the connections itself.
  boost::asio::io_context listener_context{1};
  std::unique_ptr<::sluice::net::internal::TcpListener> listener;
  HandedConnections handed;  // On the listener's thread.
  // New connections until their first bytes; on the listener's thread. After listener_context:
  // destroyed first.
  std::unique_ptr<PrefaceGate> gate;
  std::thread listener_thread;
};

GrpcServer::GrpcServer(GrpcServerOptions options, std::vector<GrpcService*> services)
    : options_(std::move(options)), services_(std::move(services)) {}

GrpcServer::GrpcServer(GrpcServerOptions options, RateLimitService& service)
    : options_(std::move(options)),
      owned_rls_(std::make_unique<RlsGrpcService>(
          service, RlsGrpcServiceOptions{.max_in_flight = options_.max_in_flight})),
      services_{owned_rls_.get()} {}

GrpcServer::~GrpcServer() {
  // Stop() throws only when the listener thread cannot be joined (std::system_error), which
  // leaves no state to carry on from: say why, then end the process as the exception would have.
  try {
    Stop();
  } catch (const std::exception& e) {
    spdlog::critical("grpc: stopping the server failed: {}", e.what());
    std::terminate();
  } catch (...) {
    spdlog::critical("grpc: stopping the server failed");
    std::terminate();
  }
}

namespace {

// The first-bytes timeout, or the idle timeout when that is shorter.
std::chrono::milliseconds FirstBytesTimeout(const GrpcServerOptions& o) {
  if (o.max_connection_idle.count() > 0) {
    return std::min(o.first_bytes_timeout, o.max_connection_idle);
  }
  return o.first_bytes_timeout;
}

int ClampToInt(std::chrono::milliseconds d) {
  return static_cast<int>(std::min<int64_t>(d.count(), INT32_MAX));
}

}  // namespace

absl::Status GrpcServer::Start() {
  if (options_.engine == GrpcEngine::kNghttp2) return StartNghttp2();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(options_);
  if (!credentials.ok()) return credentials.status();
  impl_ = std::make_unique<Impl>();
  // Process-wide, and read when a server is built: every server then serves grpc.health.v1.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const std::optional<std::pair<std::string, uint16_t>> own = OwnListenAddress(options_);
  if (own.has_value()) {
    Impl& impl = *impl_;
    impl.gate =
        std::make_unique<PrefaceGate>(impl.listener_context, FirstBytesTimeout(options_),
                                      [&impl](::sluice::net::internal::TcpListener::Socket socket) {
                                        boost::system::error_code ignored;
                                        const int fd = socket.release(ignored);
                                        if (fd < 0) return;
                                        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
                                        impl.handed.Add(fd);
                                        grpc::AddInsecureChannelFromFd(impl.server.get(), fd);
                                      });
    impl.listener = std::make_unique<::sluice::net::internal::TcpListener>(
        impl.listener_context,
        ::sluice::net::internal::TcpListenerOptions{
            .name = "grpc",
            .address = own->first,
            .port = own->second,
            .max_connections = options_.max_connections,
            .max_connections_per_address = options_.max_connections_per_address,
            .log = [](std::string_view line) { spdlog::warn(line); },
            .make_room =
                [this, &impl] { return options_.close_idle_at_cap && impl.gate->CloseOldest(); }},
        [&impl]() -> boost::asio::io_context& { return impl.listener_context; },
        [&impl](::sluice::net::internal::TcpListener::Socket socket) {
          boost::system::error_code ignored;
          socket.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
          impl.gate->Hold(std::move(socket));
        },
        [this, &impl] {
          const size_t waiting = impl.gate->size();
          const size_t cap = options_.max_connections;
          return waiting + impl.handed.Count(cap > waiting ? cap - waiting : 0);
        });
    if (absl::Status s = impl.listener->Listen(); !s.ok()) {
      impl_.reset();
      return s;
    }
    port_ = impl.listener->port();
  } else {
    builder.AddListeningPort(options_.address, *credentials, &port_);
  }
  for (GrpcService* service : services_) builder.RegisterService(&service->GrpcCppService());
  // Bounded request size: a descriptor set is small.
  builder.SetMaxReceiveMessageSize(1 << 20);
  grpc::ResourceQuota quota("sluiced-grpc");
  quota.Resize(options_.memory_quota_bytes);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams);
  if (options_.max_connection_idle.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               ClampToInt(options_.max_connection_idle));
  }
  if (options_.max_connection_age.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               ClampToInt(options_.max_connection_age));
  }
  if (options_.max_connection_age_grace.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               ClampToInt(options_.max_connection_age_grace));
  }
  impl_->server = builder.BuildAndStart();
  // A Unix socket reports no port; it is listening when the server built.
  const bool unix_socket = options_.address.rfind("unix:", 0) == 0;
  if (impl_->server == nullptr || (port_ == 0 && !unix_socket)) {
    impl_.reset();
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", options_.address));
  }
  if (impl_->listener != nullptr) {
    // Accepting starts once the server exists to take the connections.
    impl_->listener_thread = std::thread([&context = impl_->listener_context] { context.run(); });
  }
  SetServing(true);
  return absl::OkStatus();
}

absl::Status GrpcServer::StartNghttp2() {
  const std::optional<std::pair<std::string, uint16_t>> own = OwnListenAddress(options_);
  if (!own.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "grpc: the nghttp2 engine serves plain TCP on an IP literal (\"127.0.0.1:8081\", "
        "\"[::]:8081\") only, not ",
        options_.tls_cert_file.empty() ? "" : "TLS on ", "\"", options_.address,
        "\"; use --grpc-engine grpc"));
  }
  impl_ = std::make_unique<Impl>();
  absl::flat_hash_map<std::string, h2::UnaryMethod> methods;
  std::vector<std::string> health_services = {""};
  for (GrpcService* service : services_) {
    service->AddH2Methods(methods);
    if (!service->health_name().empty()) health_services.emplace_back(service->health_name());
  }
  impl_->h2 = std::make_unique<h2::GrpcH2Server>(
      h2::GrpcH2ServerOptions{.address = own->first,
                              .port = own->second,
                              .threads = options_.engine_threads,
                              .max_connections = options_.max_connections,
                              .max_connections_per_address = options_.max_connections_per_address,
                              .close_idle_at_cap = options_.close_idle_at_cap,
                              .max_concurrent_streams = static_cast<uint32_t>(
                                  std::max(1, options_.max_concurrent_streams)),
                              // As gRPC C++ is configured above.
                              .max_message_bytes = size_t{1} << 20,
                              .max_buffered_bytes = options_.memory_quota_bytes,
                              .max_connection_idle = options_.max_connection_idle,
                              .max_connection_age = options_.max_connection_age,
                              .max_connection_age_grace = options_.max_connection_age_grace,
                              .first_bytes_timeout = FirstBytesTimeout(options_),
                              .health_services = std::move(health_services),
                              .log = [](std::string_view line) { spdlog::warn(line); }},
      std::move(methods));
  if (absl::Status s = impl_->h2->Start(); !s.ok()) {
    impl_.reset();
    return s;
  }
  port_ = impl_->h2->port();
  return absl::OkStatus();
}

void GrpcServer::SetServing(bool serving) {
  if (impl_ != nullptr && impl_->h2 != nullptr) return impl_->h2->SetServing(serving);
  if (impl_ == nullptr || impl_->server == nullptr) return;
  grpc::HealthCheckServiceInterface* health = impl_->server->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  for (GrpcService* service : services_) {
    if (!service->health_name().empty()) {
      health->SetServingStatus(std::string(service->health_name()), serving);
    }
  }
}

absl::Status GrpcServer::ListenerHealth() const {
  if (impl_ != nullptr && impl_->h2 != nullptr) return impl_->h2->ListenerHealth();
  if (impl_ == nullptr || impl_->server == nullptr) {
    return absl::UnavailableError("grpc server is not running");
  }
  if (impl_->listener == nullptr) return absl::OkStatus();
  return impl_->listener->Health();
}

GrpcServerStats GrpcServer::Stats() const {
  if (impl_ == nullptr) return {};
  GrpcServerStats stats;
  for (const GrpcService* service : services_) {
    const GrpcCallStats calls = service->CallStats();
    stats.in_flight += calls.in_flight;
    stats.rejected_in_flight += calls.rejected_in_flight;
    stats.rejected_connection_share += calls.rejected_connection_share;
    stats.unparsable_requests += calls.unparsable_requests;
  }
  if (impl_->h2 != nullptr) {
    const h2::GrpcH2ServerStats engine = impl_->h2->Stats();
    stats.listener = engine.listener;
    stats.silent_closed = engine.silent_closed;
  } else if (impl_->listener != nullptr) {
    stats.listener = impl_->listener->Stats();
    stats.silent_closed = impl_->gate->timed_out();
  }
  return stats;
}

void GrpcServer::Stop() {
  // Every call a service still holds, waited for once the engine no longer starts new ones: a
  // reactor's OnDone() may run after gRPC C++'s Wait() returns, and touches its service.
  auto wait_for_services = [this] {
    for (GrpcService* service : services_) {
      if (!service->WaitIdle(std::chrono::seconds(10))) {
        spdlog::error("grpc: {} calls still in flight after 10 s; stopping anyway",
                      service->CallStats().in_flight);
      }
    }
  };
  if (impl_ != nullptr && impl_->h2 != nullptr) {
    impl_->h2->Stop();
    wait_for_services();
    impl_.reset();
    return;
  }
  if (impl_ == nullptr || impl_->server == nullptr) return;
  if (impl_->listener != nullptr) {
    // No connection is handed to a server that is shutting down.
    boost::asio::post(impl_->listener_context, [this] { impl_->listener->Close(); });
    impl_->listener_context.stop();
    if (impl_->listener_thread.joinable()) impl_->listener_thread.join();
    impl_->listener->Close();
    impl_->gate->CloseAll();  // Nobody runs the listener's thread now.
  }
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  impl_->server->Wait();
  wait_for_services();
  impl_.reset();
}

}  // namespace sluice::server
