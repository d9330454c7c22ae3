// PrometheusText(): the middleware's counters (Middleware::Stats()) in the Prometheus text
// exposition format (version 0.0.4), for an application to serve on its metrics endpoint.
//
// Each MiddlewareStats field is one counter named `<prefix><field>_total` with its HELP and TYPE
// lines, as sluiced names its own (`sluice_http_over_limit_total`, ...). Append the text to the
// application's other metrics, or serve it alone with Content-Type kPrometheusContentType.
//
// Example:
//   server.Get("/metrics", [&middleware](const httplib::Request&, httplib::Response& res) {
//     res.set_content(sluice::http::PrometheusText(middleware->Stats()),
//                     sluice::http::kPrometheusContentType);
//   });
//
// Thread safety: a pure function of its arguments.
#ifndef SLUICE_HTTP_PROMETHEUS_H_
#define SLUICE_HTTP_PROMETHEUS_H_

#include <string>
#include <string_view>

#include "sluice/http/middleware.h"

namespace sluice::http {

// The Content-Type of the Prometheus text exposition format.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// PrometheusText()
//
// Returns `stats` as seven counters, `<prefix>enabled_total`, `<prefix>enforced_total`,
// `<prefix>over_limit_total`, `<prefix>ok_total`, `<prefix>error_total`,
// `<prefix>local_fallback_total` and `<prefix>ambiguous_path_total`, each preceded by its
// `# HELP` and `# TYPE ... counter` lines, every line ending in "\n". A character of `prefix`
// that a metric name may not hold (outside [a-zA-Z0-9_:], or a leading digit) is written as '_'.
std::string PrometheusText(const MiddlewareStats& stats, std::string_view prefix = "sluice_http_");

}  // namespace sluice::http

#endif  // SLUICE_HTTP_PROMETHEUS_H_
