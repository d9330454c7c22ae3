// docs/middleware.md's quick start for cpp-httplib: rules with tiers, a Redis store shared by every
// instance, the application's authentication, the rate limit before routing, a policy attached
// to one handler, and the counters for Prometheus. The install tests build it against the
// installed tree and run it with QUICKSTART_WIRE_ONLY set, which stops before listening.
#include <cstdlib>

// [httplib quick start]
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <httplib.h>

#include "sluice/http/httplib.h"
#include "sluice/http/middleware.h"
#include "sluice/http/middleware_config.h"
#include "sluice/http/prometheus.h"
#include "sluice/redis_store.h"

// The rules, usually a file: LoadMiddlewareConfig("rules.yaml"). A client's tier comes from
// authenticate() below; requests without a user are "anonymous" and counted per address.
constexpr std::string_view kRules = R"(
area: shop
global:                              # every request, per client: the flood guard
  limits: [{name: global, limit: 50, period: 1s, algorithm: gcra, burst: 100}]
routes:
  - name: list-items
    method: GET
    path: /api/items
    tiers:
      anonymous: [{name: items, limit: 5, period: 1s, algorithm: gcra}]
      authenticated: [{name: items, limit: 20, period: 1s, algorithm: gcra}]
      premium: []                    # not limited by this route (the global rule still is)
policies:                            # attached to handlers in code, with Limited()
  - name: orders-read
    tiers:
      anonymous: [{name: orders, limit: 10, period: 1m, algorithm: gcra}]
      "*": [{name: orders, limit: 60, period: 1m, algorithm: gcra}]
)";

// The application's token check (a toy: "Bearer <user>:<tier>"): who is asking, in which tier.
std::optional<sluice::http::Principal> LookUpToken(std::string_view token) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return sluice::http::Principal{.id = std::string(token.substr(0, colon)),
                                 .tier = std::string(token.substr(colon + 1))};
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

  httplib::Server server;
  // The global rule and the route rules, before routing: a rejected request is answered there.
  sluice::http::InstallRateLimit(server, **middleware);
  server.Get("/api/items", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("[]", "application/json");
  });
  // The policy "orders-read" on this handler alone; a name the rules lack fails here.
  absl::StatusOr<httplib::Server::Handler> get_order = sluice::http::Limited(
      **middleware, "orders-read", [](const httplib::Request& req, httplib::Response& res) {
        res.set_content("{\"id\":" + req.matches[1].str() + "}", "application/json");
      });
  if (!get_order.ok()) {
    std::fprintf(stderr, "%s\n", get_order.status().ToString().c_str());
    return 1;
  }
  server.Get(R"(/api/orders/(\d+))", *std::move(get_order));
  server.Get("/metrics", [&middleware](const httplib::Request&, httplib::Response& res) {
    res.set_content(sluice::http::PrometheusText((*middleware)->Stats()),
                    sluice::http::kPrometheusContentType);
  });
  // [httplib quick start]
  if (std::getenv("QUICKSTART_WIRE_ONLY") != nullptr) {
    std::puts("httplib quick start: wired");
    return 0;
  }
  // [httplib quick start]
  return server.listen("0.0.0.0", 8080) ? 0 : 1;
}
// [httplib quick start]
