#include "examples/api_server/api_server.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include "sluice/http/beast.h"
#include "sluice/net/beast_server.h"

namespace sluice::examples {
namespace {

namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using Request = net::BeastServer::Request;
using Response = net::BeastServer::Response;

// Request header bytes (request line and fields) and body bytes a request may have.
constexpr uint32_t kMaxHeaderBytes = 8 * 1024;
constexpr uint64_t kMaxBodyBytes = uint64_t{1024} * 1024;

std::atomic<uint64_t> next_order_id{1000};

Response Json(const Request& req, bhttp::status status, std::string body) {
  Response res(status, req.version());
  res.set(bhttp::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// The application: what runs once a request has passed the middleware.
Response Route(const Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  constexpr std::string_view kOrders = "/api/orders/";
  if (req.method() == bhttp::verb::get && path == "/healthz") {
    return Json(req, bhttp::status::ok, R"({"status":"ok"})");
  }
  if (req.method() == bhttp::verb::get && path == "/api/items") {
    return Json(req, bhttp::status::ok,
                R"({"items":[{"id":1,"name":"anvil"},{"id":2,"name":"rope"}]})");
  }
  if (req.method() == bhttp::verb::get && path.starts_with(kOrders) &&
      path.size() > kOrders.size() && path.find('/', kOrders.size()) == std::string_view::npos) {
    const std::string_view id = path.substr(kOrders.size());
    if (id.find_first_not_of("0123456789") == std::string_view::npos) {
      return Json(req, bhttp::status::ok,
                  absl::StrCat(R"({"id":)", absl::string_view(id.data(), id.size()),
                               R"(,"status":"shipped"})"));
    }
  }
  if (req.method() == bhttp::verb::post && path == "/api/orders") {
    return Json(req, bhttp::status::created,
                absl::StrCat(R"({"id":)", next_order_id.fetch_add(1), R"(,"status":"new"})"));
  }
  return Json(req, bhttp::status::not_found, R"({"error":"not found"})");
}

// Serves one request: the middleware decides first (asynchronously: the verdict comes back on the
// connection's thread), then the application answers, with the verdict's RateLimit headers.
void Serve(http::Middleware* middleware, Request& req, const tcp::endpoint& peer,
           net::BeastServer::Responder respond) {
  if (middleware == nullptr) return std::move(respond)(Route(req));
  const net::BeastServer::Executor executor = respond.executor();
  // `req` stays valid until `respond` is called.
  http::CheckBeastRequest(
      *middleware, executor, req, peer,
      [&req, respond = std::move(respond)](const http::Verdict& verdict) mutable {
        if (!verdict.passed()) {
          return std::move(respond)(http::MakeRejection(verdict, req.version(), req.keep_alive()));
        }
        Response res = Route(req);
        http::ApplyVerdictHeaders(verdict, res);
        std::move(respond)(std::move(res));
      });
}

}  // namespace

std::optional<http::Principal> ToyAuthenticate(const http::RequestView& request) {
  const std::optional<std::string_view> auth = request.Header("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (!auth || !auth->starts_with(kBearer)) return std::nullopt;
  const std::string_view token = auth->substr(kBearer.size());
  const size_t colon = token.find(':');
  http::Principal principal{.id = std::string(token.substr(0, colon)), .tier = {}};
  if (colon != std::string_view::npos) principal.tier = std::string(token.substr(colon + 1));
  if (principal.id.empty()) return std::nullopt;
  return principal;
}

struct ApiServer::Impl {
  explicit Impl(ApiServerOptions options)
      : server(net::BeastServerOptions{.name = "api_server",
                                       .address = std::move(options.address),
                                       .port = options.port,
                                       .threads = std::max(1, options.threads),
                                       .max_header_bytes = kMaxHeaderBytes,
                                       .max_body_bytes = kMaxBodyBytes},
               [middleware = options.middleware](Request& req, const tcp::endpoint& peer,
                                                 net::BeastServer::Responder respond) {
                 Serve(middleware, req, peer, std::move(respond));
               }) {}

  net::BeastServer server;
};

ApiServer::ApiServer(ApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

ApiServer::~ApiServer() = default;

absl::Status ApiServer::Start() { return impl_->server.Start(); }

void ApiServer::Stop() { impl_->server.Stop(); }

uint16_t ApiServer::port() const { return impl_->server.port(); }

}  // namespace sluice::examples
