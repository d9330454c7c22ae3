// DashboardRoutes(): the live dashboard's HTTP routes, served where /json is (the main HTTP
// listener, loopback by default) and on the debug listener:
//
//   GET /dashboard            the page (dashboard.html), which loads the two below
//   GET /dashboard/app.js     its script
//   GET /dashboard/app.css    its style
//   GET /dashboard/icon.svg   its icon
//   GET /dashboard/feed.json  the feed (Dashboard::FeedJson()); ?domain=NAME narrows it
//
// Every answer carries Cache-Control: no-store, X-Content-Type-Options: nosniff and a strict
// Content-Security-Policy (same-origin script, style and fetch only; no inline code, no frames),
// so that the page runs nothing but its own files whatever the values it shows.
//
// Example:
//   std::vector<Route> routes = DashboardRoutes(dashboard);
//
// Thread safety: the handlers are thread-safe; `dashboard` must outlive them.
#ifndef SLUICE_SERVER_DASHBOARD_DASHBOARD_ROUTES_H_
#define SLUICE_SERVER_DASHBOARD_DASHBOARD_ROUTES_H_

#include <string>
#include <string_view>
#include <vector>

#include "src/server/admin/routes.h"
#include "src/server/dashboard/dashboard.h"

namespace sluice::server {

// The Content-Security-Policy of every dashboard answer.
inline constexpr std::string_view kDashboardCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Returns the routes above.
std::vector<Route> DashboardRoutes(const Dashboard& dashboard);

// Returns the `domain` query parameter of `target`, percent-decoded; empty when absent.
std::string DomainParameter(std::string_view target);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_DASHBOARD_DASHBOARD_ROUTES_H_
