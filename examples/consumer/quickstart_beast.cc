// docs/middleware.md's quick start for Boost.Beast: rules with tiers, a Redis store shared by every
// instance, the application's authentication, and the middleware in front of the application's
// routes on sluice's Beast server. The install tests build it against the installed tree and run
// it with QUICKSTART_WIRE_ONLY set, which stops before listening.
#include <cstdlib>

// [beast quick start]
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http.hpp>

#include "sluice/http/beast.h"
#include "sluice/http/beast_server.h"
#include "sluice/http/middleware.h"
#include "sluice/http/middleware_config.h"
#include "sluice/redis_store.h"

namespace http = boost::beast::http;
using sluice::http::BeastServer;

// The rules, usually a file: LoadMiddlewareConfig("rules.yaml"). A client's tier comes from
// authenticate() below; requests without a user are "anonymous" and counted per address.
constexpr std::string_view kRules = R"(
area: shop
global:                              # every request, per client: the flood guard
  limits: [{name: global, limit: 50, period: 1s, algorithm: gcra, burst: 100}]
routes:
  - name: get-order
    method: GET
    path: /api/orders/{id}
    tiers:
      anonymous: [{name: orders, limit: 10, period: 1m, algorithm: gcra}]
      authenticated: [{name: orders, limit: 60, period: 1m, algorithm: gcra}]
      premium: []                    # not limited by this route (the global rule still is)
)";

// The application's token check (a toy: "Bearer <user>:<tier>"): who is asking, in which tier.
std::optional<sluice::http::Principal> LookUpToken(std::string_view token) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return sluice::http::Principal{.id = std::string(token.substr(0, colon)),
                                 .tier = std::string(token.substr(colon + 1))};
}

// The application's routes (Beast has no router).
BeastServer::Response Route(const BeastServer::Request& req) {
  BeastServer::Response res(http::status::ok, req.version());
  res.set(http::field::content_type, "application/json");
  res.body() = req.target().starts_with("/api/orders/") ? "{}" : "[]";
  return res;
}

int main() {
  absl::StatusOr<std::shared_ptr<const sluice::http::MiddlewareConfig>> config =
      sluice::http::ParseMiddlewareConfig(kRules, "rules.yaml");
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  // Counters shared by every instance. It connects in the background; while Redis cannot be
  // reached, the middleware limits on a local fallback (response.store_error: local).
  absl::StatusOr<std::unique_ptr<sluice::RedisStore>> store =
      sluice::RedisStore::Create({.url = "redis://127.0.0.1:6379"});
  if (!store.ok()) return 1;
  absl::StatusOr<std::unique_ptr<sluice::http::Middleware>> middleware =
      sluice::http::Middleware::Create({
          .store = store->get(),
          .config = *config,
          .authenticate = [](const sluice::http::RequestView& request)
              -> std::optional<sluice::http::Principal> {
            const std::string_view auth = request.Header("Authorization").value_or("");
            if (!auth.starts_with("Bearer ")) return std::nullopt;
            return LookUpToken(auth.substr(7));
          },
      });
  if (!middleware.ok()) return 1;

  // Each request is decided without blocking the I/O thread (the Redis store answers on its
  // own thread); the verdict comes back on the connection's executor.
  BeastServer server(
      {.address = "0.0.0.0", .port = 8080},
      [&middleware](BeastServer::Request& req, const boost::asio::ip::tcp::endpoint& peer,
                    BeastServer::Responder respond) {
        const BeastServer::Executor executor = respond.executor();
        sluice::http::CheckBeastRequest(
            **middleware, executor, req, peer,
            [&req, respond = std::move(respond)](const sluice::http::Verdict& verdict) mutable {
              if (!verdict.passed()) {
                return std::move(respond)(
                    sluice::http::MakeRejection(verdict, req.version(), req.keep_alive()));
              }
              BeastServer::Response res = Route(req);
              sluice::http::ApplyVerdictHeaders(verdict, res);
              std::move(respond)(std::move(res));
            });
      });
  // [beast quick start]
  if (std::getenv("QUICKSTART_WIRE_ONLY") != nullptr) {
    std::puts("beast quick start: wired");
    return 0;
  }
  // [beast quick start]
  // Serve until SIGINT or SIGTERM (blocked first, so that the server's threads leave them to
  // sigwait()); then stop the server before the middleware and the store go.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (absl::Status started = server.Start(); !started.ok()) {
    std::fprintf(stderr, "%s\n", started.ToString().c_str());
    return 1;
  }
  int signal = 0;
  sigwait(&signals, &signal);
  server.Stop();
  return 0;
}
// [beast quick start]
