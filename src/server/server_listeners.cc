#include "src/server/server_listeners.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "src/server/admin/listeners.h"
#include "src/server/listener_gauges.h"

namespace sluice::server {
namespace {

// A connection cap: the setting, or the descriptor budget when it is unset (0).
size_t Cap(size_t setting, size_t fd_budget) { return setting > 0 ? setting : fd_budget; }

GrpcServerOptions GrpcOptions(const ServerSettings& s, size_t fd_budget) {
  return GrpcServerOptions{
      .engine = s.grpc_engine == "nghttp2" ? GrpcEngine::kNghttp2 : GrpcEngine::kGrpc,
      .address = s.grpc,
      .max_connection_age = s.grpc_max_connection_age,
      .max_connection_age_grace = s.grpc_max_connection_age_grace,
      .tls_cert_file = s.grpc_tls_cert,
      .tls_key_file = s.grpc_tls_key,
      .tls_client_ca_file = s.grpc_tls_client_ca,
      .max_connections = Cap(s.grpc_max_connections, fd_budget),
      .max_connections_per_address = s.grpc_max_connections_per_address,
      .max_concurrent_streams = s.grpc_max_concurrent_streams};
}

ListenerState FromStats(std::string name, const ::sluice::net::ListenerStats& l) {
  return ListenerState{.name = std::move(name),
                       .accepted = l.accepted,
                       .rejected_over_cap = l.rejected_over_cap,
                       .closed_idle_at_cap = l.closed_idle_at_cap,
                       .rejected_per_address = l.rejected_per_address,
                       .accept_failures = l.accept_failures};
}

}  // namespace

ServerListeners::ServerListeners(const ServerSettings& settings, size_t fd_budget,
                                 std::vector<GrpcService*> services, Health& health)
    : settings_(settings),
      fd_budget_(fd_budget),
      health_(health),
      grpc_(GrpcOptions(settings, fd_budget), std::move(services)) {}

ServerListeners::~ServerListeners() { Stop(); }

absl::StatusOr<std::unique_ptr<ServerListeners>> ServerListeners::Start(
    const ServerSettings& settings, size_t fd_budget, std::vector<GrpcService*> services,
    Health& health, ListenerHandlers handlers) {
  std::unique_ptr<ServerListeners> listeners(
      new ServerListeners(settings, fd_budget, std::move(services), health));
  if (absl::Status s = listeners->StartGrpc(); !s.ok()) return s;
  if (absl::Status s = listeners->StartHttp("--http", settings.http, settings.http_threads,
                                            std::move(handlers.http));
      !s.ok()) {
    return s;
  }
  if (!settings.debug.empty()) {
    if (absl::Status s =
            listeners->StartHttp("--debug", settings.debug, 1, std::move(handlers.debug));
        !s.ok()) {
      return s;
    }
  }
  if (!settings.prometheus.empty() && !settings.disable_stats) {
    if (absl::Status s = listeners->StartHttp("--prometheus", settings.prometheus, 1,
                                              std::move(handlers.prometheus));
        !s.ok()) {
      return s;
    }
  }
  // Every listener must still accept: a listener out of descriptors for good (or closed) makes
  // /healthcheck and gRPC health fail. The list is complete here and never changes again.
  health.SetListenerHealth([l = listeners.get()] {
    absl::Status s = l->grpc_.ListenerHealth();
    for (const auto& server : l->http_) s.Update(server->ListenerHealth());
    return s;
  });
  return listeners;
}

absl::Status ServerListeners::StartGrpc() {
  if (absl::Status s = grpc_.Start(); !s.ok()) {
    return {s.code(), absl::StrCat("--grpc: ", s.message())};
  }
  // gRPC health follows /healthcheck: not serving until the first check says otherwise, then set
  // on every change that a check (periodic, or one asked over HTTP) or SIGTERM brings.
  grpc_.SetServing(false);
  health_.OnChange([this](bool healthy) {
    spdlog::info("health: {}", healthy ? "serving" : "not serving");
    grpc_.SetServing(healthy);
  });
  return absl::OkStatus();
}

absl::Status ServerListeners::StartHttp(const std::string& what, const std::string& address,
                                        int threads, HttpServer::Handler handler) {
  absl::StatusOr<ListenAddress> parsed = ParseListenAddress(what, address);
  if (!parsed.ok()) return parsed.status();
  auto server = std::make_unique<HttpServer>(
      HttpServerOptions{.address = parsed->host,
                        .port = parsed->port,
                        .threads = threads,
                        .max_connections = Cap(settings_.http_max_connections, fd_budget_),
                        .max_connections_per_address = settings_.http_max_connections_per_address},
      std::move(handler));
  if (absl::Status s = server->Start(); !s.ok()) return s;
  spdlog::info("{} listening on {}:{}", what, parsed->host, server->port());
  http_.push_back(std::move(server));
  http_names_.push_back(what.substr(2));  // "--http" -> "http"
  return absl::OkStatus();
}

void ServerListeners::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // First, on every path out: a check completing late must not reach what stops below.
  health_.OnChange(nullptr);
  health_.SetListenerHealth(nullptr);
  grpc_.Stop();
  for (auto& server : http_) server->Stop();
}

void ServerListeners::AppendPrometheus(std::string& out) const {
  const GrpcServerStats g = grpc_.Stats();
  ListenersState state{.listeners = {FromStats("grpc", g.listener)},
                       .grpc_in_flight = g.in_flight,
                       .grpc_rejected_in_flight = g.rejected_in_flight,
                       .grpc_rejected_connection_share = g.rejected_connection_share,
                       .grpc_unparsable_requests = g.unparsable_requests,
                       .grpc_silent_connections_closed = g.silent_closed};
  for (size_t i = 0; i < http_.size(); ++i) {
    state.listeners.push_back(FromStats(http_names_[i], http_[i]->ListenerStats()));
  }
  AppendListenerFamilies(state, out);
}

}  // namespace sluice::server
