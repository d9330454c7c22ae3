#include "src/http/route_template.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::http::internal {
namespace {

RouteTemplate Template(std::string_view text) {
  return RouteTemplate::Parse(text, PathMatch::kTemplate).value();
}
RouteTemplate Prefix(std::string_view text) {
  return RouteTemplate::Parse(text, PathMatch::kPrefix).value();
}

TEST(RouteTemplate, MatchesLiteralAndParameterSegments) {
  RouteTemplate t = Template("/api/orders/{id}");
  EXPECT_TRUE(t.Matches("/api/orders/42"));
  EXPECT_TRUE(t.Matches("/api/orders/abc"));
  EXPECT_FALSE(t.Matches("/api/orders"));
  EXPECT_FALSE(t.Matches("/api/orders/"));
  EXPECT_FALSE(t.Matches("/api/orders/42/items"));
  EXPECT_FALSE(t.Matches("/api/Orders/42"));
  EXPECT_FALSE(t.Matches("/api/order/42"));
  RouteTemplate two = Template("/users/{user}/orders/{order}");
  EXPECT_TRUE(two.Matches("/users/7/orders/9"));
  EXPECT_FALSE(two.Matches("/users/7/orders"));
}

// Verifies that spellings a router usually treats as the same route cannot dodge the rule.
TEST(RouteTemplate, IgnoresEmptySegments) {
  RouteTemplate t = Template("/api/items");
  EXPECT_TRUE(t.Matches("/api/items"));
  EXPECT_TRUE(t.Matches("/api/items/"));
  EXPECT_TRUE(t.Matches("//api///items"));
  EXPECT_TRUE(Template("/").Matches("/"));
  EXPECT_TRUE(Template("/").Matches(""));
  EXPECT_FALSE(Template("/").Matches("/x"));
}

TEST(RouteTemplate, PrefixMatchesWholeSegments) {
  RouteTemplate p = Prefix("/static");
  EXPECT_TRUE(p.Matches("/static"));
  EXPECT_TRUE(p.Matches("/static/"));
  EXPECT_TRUE(p.Matches("/static/css/site.css"));
  EXPECT_FALSE(p.Matches("/staticx"));
  EXPECT_FALSE(p.Matches("/"));
  EXPECT_TRUE(Prefix("/").Matches("/anything/at/all"));
  EXPECT_TRUE(Prefix("/").Matches("/"));
}

TEST(RouteTemplate, CanonicalFormIsTheKeyComponent) {
  EXPECT_EQ(Template("/api//orders/{id}/").Canonical(), "/api/orders/{id}");
  EXPECT_EQ(Template("/").Canonical(), "/");
  EXPECT_EQ(Prefix("/static/").Canonical(), "/static/*");
  EXPECT_EQ(Prefix("/").Canonical(), "/*");
}

TEST(RouteTemplate, RejectsMalformedTemplates) {
  for (std::string_view bad :
       {"", "api/items", "/orders/{id", "/orders/id}", "/orders/{}", "/orders/x{id}",
        "/orders/{id}x", "/orders/{1d}", "/o/{a-b}", "/a/{id}/b/{id}"}) {
    EXPECT_FALSE(RouteTemplate::Parse(bad, PathMatch::kTemplate).ok()) << bad;
  }
  EXPECT_FALSE(RouteTemplate::Parse("/static/{id}", PathMatch::kPrefix).ok());
}

TEST(RouteTemplate, SameShapeAcceptsFrameworkSpellings) {
  RouteTemplate t = Template("/api/orders/{id}");
  EXPECT_TRUE(t.SameShape("/api/orders/{id}"));
  EXPECT_TRUE(t.SameShape("/api/orders/{order_id}"));
  EXPECT_TRUE(t.SameShape("/api/orders/:id"));
  EXPECT_TRUE(t.SameShape("/api/orders/<int:id>"));
  EXPECT_FALSE(t.SameShape("/api/orders"));
  EXPECT_FALSE(t.SameShape("/api/orders/42"));
  EXPECT_FALSE(t.SameShape("/api/orders/{id}/x"));
  EXPECT_FALSE(Template("/api/items").SameShape("/api/{x}"));
}

}  // namespace
}  // namespace sluice::http::internal
