#include "src/server/admin/http_server.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "spdlog/spdlog.h"
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>

#include "sluice/net/beast_server.h"

namespace sluice::server {
namespace {

namespace bhttp = boost::beast::http;
using ::sluice::net::BeastServer;

// The Beast server's handler for `handler`: a request as a struct in, a struct back as the answer
// (built on the thread that answers, so the connection's thread only writes it).
BeastServer::Handler AdaptHandler(HttpServer::Handler handler) {
  return [handler = std::move(handler)](BeastServer::Request& req,
                                        const boost::asio::ip::tcp::endpoint& /*peer*/,
                                        BeastServer::Responder respond) {
    HttpRequest request{.method = std::string(req.method_string()),
                        .target = std::string(req.target()),
                        .body = std::move(req.body())};
    handler(std::move(request), [respond = std::move(respond)](HttpResponse response) mutable {
      BeastServer::Response res(static_cast<bhttp::status>(response.status), 11);
      res.set(bhttp::field::content_type, response.content_type);
      for (auto& [name, value] : response.headers) res.insert(name, value);
      res.body() = std::move(response.body);
      std::move(respond)(std::move(res));
    });
  };
}

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerOptions options, Handler handler)
      : server(
            ::sluice::net::BeastServerOptions{
                .name = "http",
                .address = std::move(options.address),
                .port = options.port,
                .threads = std::max(1, options.threads),
                .max_header_bytes = 16 * 1024,
                .max_body_bytes = options.max_body_bytes,
                .idle_timeout = options.idle_timeout,
                .max_connections = options.max_connections,
                .max_connections_per_address = options.max_connections_per_address,
                .server_header = "sluiced",
                .log = [](std::string_view line) { spdlog::warn(line); }},
            AdaptHandler(std::move(handler))) {}

  BeastServer server;
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() = default;

absl::Status HttpServer::Start() { return impl_->server.Start(); }

void HttpServer::Stop() { impl_->server.Stop(); }

uint16_t HttpServer::port() const { return impl_->server.port(); }

absl::Status HttpServer::ListenerHealth() const { return impl_->server.ListenerHealth(); }

net::ListenerStats HttpServer::ListenerStats() const { return impl_->server.listener_stats(); }

size_t HttpServer::open_connections() const { return impl_->server.open_connections(); }

}  // namespace sluice::server
