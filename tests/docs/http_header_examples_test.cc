// Every `Example:` of the middleware's public headers (include/sluice/http/), as code that
// compiles and, where it needs no network, runs. examples_in_sync_test checks that each header
// still shows exactly the lines kept here between its `// [include/...]` markers.
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "sluice/net/accept_backoff.h"
#include "sluice/http/beast.h"
#include "sluice/net/beast_server.h"
#include "sluice/http/client_ip.h"
#include "sluice/http/middleware.h"
#include "sluice/http/middleware_config.h"
#include "sluice/http/prometheus.h"
#include "sluice/http/request.h"
#include "sluice/memory_store.h"
#include "sluice/status_macros.h"
#include "sluice/store.h"
#if defined(SLUICE_TEST_HTTPLIB)
#include "sluice/http/httplib.h"
#endif

// Not in an anonymous namespace: the examples that need a network are compiled, never called.
namespace sluice::http::docs {

using ::sluice::net::AcceptBackoff;
using ::sluice::net::BeastServer;

namespace beast = boost::beast;

// An accept loop as sluiced's HTTP server has one, for accept_backoff.h's example.
class Listener {
 public:
  explicit Listener(boost::asio::io_context& ioc) : acceptor_(ioc), timer_(ioc) {}

  void Accept() {
    // [include/sluice/net/accept_backoff.h]
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == boost::asio::error::operation_aborted) return;
      if (const std::chrono::milliseconds wait = backoff_.After(ec); wait.count() > 0) {
        timer_.expires_after(wait);
        timer_.async_wait([this](boost::system::error_code) { Accept(); });
        return;
      }
      if (!ec) StartSession(std::move(socket));
      Accept();
    });
    // [include/sluice/net/accept_backoff.h]
  }

 private:
  using tcp = boost::asio::ip::tcp;

  void StartSession(tcp::socket socket) { sessions_.push_back(std::move(socket)); }

  tcp::acceptor acceptor_;
  boost::asio::steady_timer timer_;
  AcceptBackoff backoff_;
  std::vector<tcp::socket> sessions_;
};

// A Beast session of an application's own, for beast.h's example.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Middleware& middleware, beast::tcp_stream stream)
      : middleware_(middleware), stream_(std::move(stream)) {}

  void OnRead() {
    // [include/sluice/http/beast.h]
    sluice::http::CheckBeastRequest(
        middleware_, stream_.get_executor(), req_, peer_,
        [self = shared_from_this()](sluice::http::Verdict verdict) {
          if (!verdict.passed()) {
            return self->Write(sluice::http::MakeRejection(verdict, self->req_.version(),
                                                           self->req_.keep_alive()));
          }
          auto res = self->Route(self->req_);
          sluice::http::ApplyVerdictHeaders(verdict, res);
          self->Write(std::move(res));
        });
    // [include/sluice/http/beast.h]
  }

 private:
  using Request = beast::http::request<beast::http::string_body>;
  using Response = beast::http::response<beast::http::string_body>;

  Response Route(const Request& req) { return Response(beast::http::status::ok, req.version()); }
  void Write(Response res) { last_ = std::move(res); }

  Middleware& middleware_;
  beast::tcp_stream stream_;
  Request req_;
  boost::asio::ip::tcp::endpoint peer_;
  Response last_;
};

// An application's routes, for beast_server.h's example.
BeastServer::Response Route(const BeastServer::Request& req) {
  return BeastServer::Response(beast::http::status::ok, req.version());
}

absl::Status BeastServerExample(Middleware& middleware) {
  // [include/sluice/net/beast_server.h]
  BeastServer server({.port = 8080}, [&middleware](BeastServer::Request& req,
                                                   const boost::asio::ip::tcp::endpoint& peer,
                                                   BeastServer::Responder respond) {
    const BeastServer::Executor executor = respond.executor();
    CheckBeastRequest(
        middleware, executor, req, peer,
        [&req, respond = std::move(respond)](const Verdict& verdict) mutable {
          if (!verdict.passed()) {
            return std::move(respond)(MakeRejection(verdict, req.version(), req.keep_alive()));
          }
          BeastServer::Response res = Route(req);
          ApplyVerdictHeaders(verdict, res);
          std::move(respond)(std::move(res));
        });
  });
  SLUICE_RETURN_IF_ERROR(server.Start());
  // [include/sluice/net/beast_server.h]
  return absl::OkStatus();
}

absl::StatusOr<std::optional<IpAddress>> ClientIpExample(const RequestView& view) {
  // [include/sluice/http/client_ip.h]
  absl::StatusOr<Cidr> proxies = ParseCidr("10.0.0.0/8");
  if (!proxies.ok()) return proxies.status();
  ClientIpOptions options{.trusted_proxies = {*proxies}};
  std::optional<IpAddress> ip = ResolveClientIp(options, view.peer_address, view.headers);
  // [include/sluice/http/client_ip.h]
  return ip;
}

#if defined(SLUICE_TEST_HTTPLIB)
void GetOrder(const httplib::Request&, httplib::Response& res) {
  res.set_content("{}", "application/json");
}

absl::Status HttplibExample(const std::unique_ptr<Middleware>& middleware) {
  // [include/sluice/http/httplib.h]
  httplib::Server server;
  sluice::http::InstallRateLimit(server, *middleware);
  server.Get("/api/items", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("[]", "application/json");
  });
  auto get_order = sluice::http::Limited(*middleware, "orders-read", GetOrder);
  if (!get_order.ok()) return get_order.status();  // NotFound: no policy of that name
  server.Get("/api/orders/(\\d+)", *std::move(get_order));
  // [include/sluice/http/httplib.h]
  return absl::OkStatus();
}

void PrometheusExample(httplib::Server& server, const std::unique_ptr<Middleware>& middleware) {
  // [include/sluice/http/prometheus.h]
  server.Get("/metrics", [&middleware](const httplib::Request&, httplib::Response& res) {
    res.set_content(sluice::http::PrometheusText(middleware->Stats()),
                    sluice::http::kPrometheusContentType);
  });
  // [include/sluice/http/prometheus.h]
}
#endif

// What an application does with a verdict: pass the request on, or send the rejection.
void Respond(Verdict verdict) { static_cast<void>(verdict.passed()); }

absl::Status MiddlewareExample(const std::unique_ptr<Store>& store, const RequestView& view,
                               std::optional<Verdict>& out) {
  // [include/sluice/http/middleware.h]
  SLUICE_ASSIGN_OR_RETURN(auto config, LoadMiddlewareConfig("rules.yaml"));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Middleware> middleware,
                          Middleware::Create({.store = store.get(), .config = config}));
  middleware->DecideAsync(view, [](Verdict verdict) { Respond(std::move(verdict)); });
  // [include/sluice/http/middleware.h]
  out = middleware->Decide(view);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> MiddlewareConfigCppExample() {
  // [include/sluice/http/middleware_config.h]
  using std::chrono_literals::operator""s;
  MiddlewareSpec spec{
      .area = "shop",
      .routes = {{.name = "order",
                  .methods = {"GET"},
                  .path = "/api/orders/{id}",
                  .tiers = {{.tier = "anonymous",
                             .limits = {{.name = "burst", .limit = {.limit = 10, .period = 1s}},
                                        {.name = "daily",
                                         .limit = {.limit = 1000, .period = 86400s}}}}}}}};
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
      MiddlewareConfig::Create(std::move(spec));
  // [include/sluice/http/middleware_config.h]
  return config;
}

absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> MiddlewareConfigYamlExample() {
  // [include/sluice/http/middleware_config.h]
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
      LoadMiddlewareConfig("/etc/shop/rate_limits.yaml");
  // On error: "rate_limits.yaml:12:9: routes[1].tiers.premium[0].limit: must be >= 1"
  // [include/sluice/http/middleware_config.h]
  return config;
}

Verdict RequestExample(Middleware& middleware) {
  // clang-format off
  // [include/sluice/http/request.h]
  std::vector<HeaderField> fields = {{"Authorization", "Bearer alice:premium"}};
  RequestView view{.method = "GET", .path = "/api/orders/42", .headers = fields,
                   .peer_address = "192.0.2.7"};
  Verdict verdict = middleware.Decide(view);
  if (!verdict.passed()) { /* send verdict.status, verdict.headers, verdict.body */ }
  // [include/sluice/http/request.h]
  // clang-format on
  return verdict;
}

namespace {

TEST(HttpHeaderExamples, AcceptBackoffWaitsOnlyWhenOutOfDescriptors) {
  AcceptBackoff backoff;
  const boost::system::error_code emfile(EMFILE, boost::system::system_category());
  EXPECT_EQ(backoff.After(emfile), AcceptBackoff::kFirstWait);
  EXPECT_EQ(backoff.After(emfile), 2 * AcceptBackoff::kFirstWait);
  EXPECT_EQ(backoff.After({}), std::chrono::milliseconds(0));
}

TEST(HttpHeaderExamples, ClientIpTrustsTheListedProxies) {
  const std::vector<HeaderField> fields = {{"X-Forwarded-For", "198.51.100.4"}};
  absl::StatusOr<std::optional<IpAddress>> ip =
      ClientIpExample({.headers = fields, .peer_address = "10.1.2.3"});
  ASSERT_TRUE(ip.ok()) << ip.status();
  ASSERT_TRUE(ip->has_value());
  EXPECT_EQ(**ip, *ParseIpAddress("198.51.100.4"));
}

TEST(HttpHeaderExamples, MiddlewareConfigFromCppIsValid) {
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config = MiddlewareConfigCppExample();
  EXPECT_TRUE(config.ok()) << config.status();
}

TEST(HttpHeaderExamples, MiddlewareConfigFromAMissingFileIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(MiddlewareConfigYamlExample().status()));
}

TEST(HttpHeaderExamples, RequestPassesTheFirstTime) {
  absl::StatusOr<std::unique_ptr<MemoryStore>> store = MemoryStore::Create({});
  ASSERT_TRUE(store.ok());
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config = MiddlewareConfigCppExample();
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::unique_ptr<Middleware>> middleware =
      Middleware::Create({.store = store->get(), .config = *config});
  ASSERT_TRUE(middleware.ok()) << middleware.status();
  EXPECT_TRUE(RequestExample(**middleware).passed());
}

}  // namespace
}  // namespace sluice::http::docs
