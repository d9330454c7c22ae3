// README's middleware example: route rules from YAML, decided for a request the application
// describes (an adapter such as sluice/http/beast.h does this for a Boost.Beast server).
#include <cstdio>
#include <memory>
#include <string_view>
#include <vector>

#include "sluice/http/middleware.h"
#include "sluice/http/middleware_config.h"
#include "sluice/http/request.h"
#include "sluice/memory_store.h"

int main() {
  // [middleware example]
  constexpr std::string_view kRules = R"(
area: shop
routes:
  - name: get-order
    method: GET
    path: /api/orders/{id}
    tiers:
      "*":
        - {name: orders, limit: 2, period: 1m, algorithm: gcra}
)";
  absl::StatusOr<std::shared_ptr<const sluice::http::MiddlewareConfig>> config =
      sluice::http::ParseMiddlewareConfig(kRules, "rules.yaml");
  absl::StatusOr<std::unique_ptr<sluice::MemoryStore>> store = sluice::MemoryStore::Create({});
  if (!config.ok() || !store.ok()) return 1;
  absl::StatusOr<std::unique_ptr<sluice::http::Middleware>> middleware =
      sluice::http::Middleware::Create({.store = store->get(), .config = *config});
  if (!middleware.ok()) return 1;

  sluice::http::RequestView request{.method = "GET", .path = "/api/orders/42",
                                    .peer_address = "192.0.2.7"};
  sluice::http::Verdict verdict = (*middleware)->Decide(request);
  if (!verdict.passed()) {
    // Send verdict.status (429), verdict.headers and verdict.body instead of the handler's answer.
  }
  // [middleware example]

  // The limit is 2 a minute: the third request is rejected with 429.
  (*middleware)->Decide(request);
  verdict = (*middleware)->Decide(request);
  std::printf("third request: %d\n", verdict.status);
  return verdict.status == 429 ? 0 : 1;
}
