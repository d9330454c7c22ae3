#include "src/server/admin/http_api.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"

#include "src/server/admin/rls_json.h"
#include "src/server/grpc/rls_proto.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message) {
  boost::json::object body;
  body["error"] = std::string(code);
  body["message"] = std::string(message);
  return HttpResponse{.status = status, .body = boost::json::serialize(body)};
}

// An unhealthy /healthcheck, as the reference answers it (its health checker writes 500), so that
// load balancer checks configured for the reference keep working.
constexpr int kUnhealthy = 500;

// The canonical code of a failed decision, as an HTTP status (style guide item 10).
int HttpStatusFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

}  // namespace

RouteTable HttpApi::MakeRoutes() {
  return RouteTable(
      {
          Route{.path = "/json",
                .handler =
                    [this](const HttpRequest& request, HttpServer::Respond respond) {
                      if (request.method != "POST") {
                        std::move(respond)(ErrorResponse(405, "method_not_allowed", "use POST"));
                        return;
                      }
                      HandleJson(request, std::move(respond));
                    }},
          Route{
              .path = "/healthcheck",
              .handler = [this](const HttpRequest& /*request*/,
                                HttpServer::Respond respond) { HandleHealth(std::move(respond)); }},
          MetricsRoute(metrics_, options_.metrics_path),
          RlConfigRoute(service_),
      },
      [](std::string_view path) {
        return ErrorResponse(404, "not_found", absl::StrCat("no route ", internal::AbslView(path)));
      },
      options_.extra_routes);
}

void HttpApi::HandleJson(const HttpRequest& request, HttpServer::Respond respond) {
  RateLimitRequest parsed;
  if (absl::Status s = ParseRateLimitRequestJson(request.body, &parsed); !s.ok()) {
    std::move(respond)(ErrorResponse(400, "invalid_argument", internal::StdView(s.message())));
    return;
  }
  ShouldRateLimit(
      service_, parsed,
      [respond = std::move(respond)](absl::StatusOr<RateLimitResponse> result) mutable {
        if (!result.ok()) {
          const int status = HttpStatusFor(result.status());
          std::move(respond)(ErrorResponse(status, absl::StatusCodeToString(result.status().code()),
                                           std::string(result.status().message())));
          return;
        }
        std::string body = RateLimitResponseToJson(*result);
        const int status = result->overall_code() == RateLimitResponse::OVER_LIMIT ? 429 : 200;
        std::move(respond)(HttpResponse{.status = status, .body = std::move(body)});
      });
}

void HttpApi::HandleHealth(HttpServer::Respond respond) {
  health_.Check([respond = std::move(respond)](const HealthResult& r) mutable {
    if (!r.healthy) {
      std::move(respond)(ErrorResponse(kUnhealthy, r.reason, r.message));
      return;
    }
    std::move(respond)(HttpResponse{.status = 200, .content_type = "text/plain", .body = "OK"});
  });
}

}  // namespace sluice::server
