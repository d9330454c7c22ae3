#include "src/server/dashboard/dashboard_routes.h"

#include <string>
#include <utility>

namespace sluice::internal {
// Embedded at build time from src/server/dashboard/dashboard.{html,js,css} (CMakeLists.txt).
extern const std::string_view kDashboardHtml;
extern const std::string_view kDashboardJs;
extern const std::string_view kDashboardCss;
}  // namespace sluice::internal

namespace sluice::server {
namespace {

HttpResponse Answer(std::string content_type, std::string body) {
  return HttpResponse{.status = 200,
                      .content_type = std::move(content_type),
                      .body = std::move(body),
                      .headers = {{"Cache-Control", "no-store"},
                                  {"Content-Security-Policy", std::string(kDashboardCsp)},
                                  {"X-Content-Type-Options", "nosniff"},
                                  {"Referrer-Policy", "no-referrer"}}};
}

Route Static(std::string path, std::string content_type, std::string_view body) {
  return Route{.path = std::move(path),
               .handler = [content_type = std::move(content_type), body](
                              const HttpRequest& /*request*/, HttpServer::Respond respond) {
                 std::move(respond)(Answer(content_type, std::string(body)));
               }};
}

// Two bars, the second cut short: a sluice gate.
constexpr std::string_view kIcon =
    R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">)"
    R"(<rect x="2" y="2" width="5" height="12" fill="#2d5bd0"/>)"
    R"(<rect x="9" y="6" width="5" height="8" fill="#c4321f"/></svg>)";

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string DomainParameter(std::string_view target) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (!pair.starts_with("domain=")) continue;
    std::string out;
    const std::string_view v = pair.substr(7);
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '%' && i + 2 < v.size() && HexDigit(v[i + 1]) >= 0 && HexDigit(v[i + 2]) >= 0) {
        out += static_cast<char>(HexDigit(v[i + 1]) * 16 + HexDigit(v[i + 2]));
        i += 2;
      } else {
        out += v[i] == '+' ? ' ' : v[i];
      }
    }
    return out;
  }
  return "";
}

std::vector<Route> DashboardRoutes(const Dashboard& dashboard) {
  return {
      Static("/dashboard", "text/html; charset=utf-8", internal::kDashboardHtml),
      Static("/dashboard/app.js", "text/javascript; charset=utf-8", internal::kDashboardJs),
      Static("/dashboard/app.css", "text/css; charset=utf-8", internal::kDashboardCss),
      Static("/dashboard/icon.svg", "image/svg+xml", kIcon),
      Route{.path = "/dashboard/feed.json",
            .handler =
                [&dashboard](const HttpRequest& request, HttpServer::Respond respond) {
                  std::move(respond)(Answer("application/json",
                                            dashboard.FeedJson(DomainParameter(request.target))));
                }},
  };
}

}  // namespace sluice::server
