// RouteTable (src/server/admin/routes.h): a path (without its query) to its handler, else the
// table's not-found answer; empty paths left out, the first of two routes for a path kept.
#include "src/server/admin/routes.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::server {
namespace {

Route Answering(std::string path, std::string body) {
  return Route{.path = std::move(path),
               .handler = [body = std::move(body)](const HttpRequest& /*request*/,
                                                   HttpServer::Respond respond) {
                 std::move(respond)(HttpResponse{.status = 200, .body = body});
               }};
}

HttpResponse Call(const RouteTable& routes, std::string target) {
  HttpResponse out{.status = 0};
  routes.Handle(HttpRequest{.method = "GET", .target = std::move(target)},
                [&out](HttpResponse r) { out = std::move(r); });
  return out;
}

RouteTable Table(std::vector<Route> routes) {
  return RouteTable(std::move(routes), [](std::string_view path) {
    return HttpResponse{.status = 404, .body = std::string(path)};
  });
}

TEST(RouteTable, AnswersByPathIgnoringTheQuery) {
  const RouteTable routes = Table({Answering("/a", "A"), Answering("/b", "B")});
  EXPECT_EQ(Call(routes, "/a").body, "A");
  EXPECT_EQ(Call(routes, "/b?x=1").body, "B");
}

TEST(RouteTable, AnUnknownPathGetsTheNotFoundAnswerWithItsPath) {
  const RouteTable routes = Table({Answering("/a", "A")});
  const HttpResponse r = Call(routes, "/c?x=1");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "/c");
}

// Verifies a route with no path (a listener that does not serve it) answers nothing.
TEST(RouteTable, AnEmptyPathIsLeftOut) {
  const RouteTable routes = Table({Answering("", "never")});
  EXPECT_EQ(Call(routes, "").status, 404);
}

TEST(RouteTable, TheFirstRouteForAPathWins) {
  const RouteTable routes = Table({Answering("/a", "first"), Answering("/a", "second")});
  EXPECT_EQ(Call(routes, "/a").body, "first");
}

}  // namespace
}  // namespace sluice::server
