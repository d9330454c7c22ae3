#include "src/server/listeners.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice::server {
namespace {

using ::sluice::internal::AbslView;

std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

HttpResponse NotFound(std::string_view path) {
  return HttpResponse{.status = 404,
                      .content_type = "text/plain",
                      .body = absl::StrCat("404 page not found: ", AbslView(path), "\n")};
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view what, std::string_view text) {
  const size_t colon = text.rfind(':');
  int port = -1;
  if (colon == std::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(AbslView(text.substr(colon + 1)), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(what), ": expected host:port, got '", AbslView(text), "'"));
  }
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return ListenAddress{.host = std::move(host), .port = static_cast<uint16_t>(port)};
}

HttpServer::Handler DebugHandler(const RateLimitService& service) {
  return [&service](const HttpRequest& request, HttpServer::Respond respond) {
    const std::string_view path = PathOf(request.target);
    if (path == "/rlconfig") {
      std::shared_ptr<const RateLimitConfig> config = service.config();
      std::move(respond)(HttpResponse{.status = 200,
                                      .content_type = "text/plain",
                                      .body = config != nullptr ? config->Dump() : ""});
    } else if (path == "/") {
      std::move(respond)(HttpResponse{
          .status = 200,
          .content_type = "text/plain",
          .body = "/rlconfig: print out the currently loaded configuration for debugging\n"});
    } else {
      std::move(respond)(NotFound(path));
    }
  };
}

HttpServer::Handler PrometheusHandler(const Metrics& metrics, std::string path) {
  return
      [&metrics, path = std::move(path)](const HttpRequest& request, HttpServer::Respond respond) {
        const std::string_view target = PathOf(request.target);
        if (target != path) {
          std::move(respond)(NotFound(target));
          return;
        }
        std::move(respond)(HttpResponse{
            .status = 200, .content_type = "text/plain; version=0.0.4", .body = metrics.Render()});
      };
}

}  // namespace sluice::server
