#include "src/server/http_api.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"

#include "src/server/rls_json.h"
#include "src/util/strings.h"

namespace sluice::server {
namespace {

HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message) {
  boost::json::object body;
  body["error"] = std::string(code);
  body["message"] = std::string(message);
  return HttpResponse{.status = status, .body = boost::json::serialize(body)};
}

// The limit /healthcheck peeks at; any valid limit serves, since a peek records nothing.
constexpr Limit kHealthCheckLimit{.limit = 1, .period = std::chrono::seconds(1)};

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

void HttpApi::Handle(const HttpRequest& request, HttpServer::Respond respond) {
  const std::string_view target = request.target;
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/json") {
    if (request.method != "POST") {
      std::move(respond)(ErrorResponse(405, "method_not_allowed", "use POST"));
      return;
    }
    HandleJson(request, std::move(respond));
  } else if (path == "/healthcheck") {
    HandleHealth(std::move(respond));
  } else if (path == "/metrics") {
    std::move(respond)(HttpResponse{
        .status = 200, .content_type = "text/plain; version=0.0.4", .body = metrics_.Render()});
  } else if (path == "/rlconfig") {
    std::shared_ptr<const RateLimitConfig> config = service_.config();
    std::move(respond)(HttpResponse{.status = 200,
                                    .content_type = "text/plain",
                                    .body = config != nullptr ? config->Dump() : ""});
  } else {
    std::move(respond)(
        ErrorResponse(404, "not_found", absl::StrCat("no route ", internal::AbslView(path))));
  }
}

void HttpApi::HandleJson(const HttpRequest& request, HttpServer::Respond respond) {
  RateLimitRequest parsed;
  if (absl::Status s = ParseRateLimitRequestJson(request.body, &parsed); !s.ok()) {
    std::move(respond)(ErrorResponse(400, "invalid_argument", internal::StdView(s.message())));
    return;
  }
  service_.ShouldRateLimit(
      parsed, [respond = std::move(respond)](absl::StatusOr<RateLimitResponse> result) mutable {
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
  if (terminating_.load()) {
    std::move(respond)(ErrorResponse(kUnhealthy, "terminating", "shutting down"));
    return;
  }
  if (service_.config() == nullptr) {
    std::move(respond)(ErrorResponse(kUnhealthy, "no_config", "no rate limit config loaded"));
    return;
  }
  {
    internal::MutexLock lock(&mu_);
    if (listener_health_) {
      if (absl::Status s = listener_health_(); !s.ok()) {
        std::move(respond)(ErrorResponse(kUnhealthy, "listener_dead", std::string(s.message())));
        return;
      }
    }
  }
  // A peek writes nothing but runs the same path as a real check (for Redis: EVALSHA, with
  // NOSCRIPT recovery), so a server that answers PING but cannot run our scripts is unhealthy.
  health_store_.CheckAsync(
      "sluice-healthcheck", kHealthCheckLimit, 0,
      [respond = std::move(respond)](const absl::StatusOr<Decision>& d) mutable {
        if (!d.ok()) {
          std::move(respond)(
              ErrorResponse(kUnhealthy, "store_unavailable", std::string(d.status().message())));
          return;
        }
        std::move(respond)(HttpResponse{.status = 200, .content_type = "text/plain", .body = "OK"});
      });
}

}  // namespace sluice::server
