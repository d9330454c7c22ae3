#include "examples/api_server/api_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "sluice/http/accept_backoff.h"
#include "sluice/http/beast.h"


namespace sluice::examples {
namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Request = bhttp::request<bhttp::string_body>;
using Response = bhttp::response<bhttp::string_body>;

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
      return Json(
          req, bhttp::status::ok,
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

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, http::Middleware* middleware)
      : stream_(std::move(socket)), middleware_(middleware) {
    beast::error_code ec;
    peer_ = stream_.socket().remote_endpoint(ec);
  }

  void Run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(kMaxBodyBytes);
    stream_.expires_after(std::chrono::seconds(30));
    bhttp::async_read(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec == bhttp::error::header_limit) {
            return self->RefuseTooLarge(bhttp::status::request_header_fields_too_large,
                                        R"({"error":"request header fields too large"})");
          }
          if (ec == bhttp::error::body_limit) {
            return self->RefuseTooLarge(bhttp::status::payload_too_large,
                                        R"({"error":"request body too large"})");
          }
          if (ec) return self->Close();
          self->req_ = self->parser_->release();
          self->OnRequest();
        });
  }

  // Answers a request that broke a size limit, then closes: the rest of it is still unread, so
  // the connection cannot carry another request.
  void RefuseTooLarge(bhttp::status status, std::string body) {
    Request head;  // HTTP/1.1, not keep-alive.
    head.keep_alive(false);
    Write(Json(head, status, std::move(body)));
  }

  void OnRequest() {
    if (middleware_ == nullptr) return Write(Route(req_));
    http::CheckBeastRequest(
        *middleware_, stream_.get_executor(), req_, peer_,
        [self = shared_from_this()](const http::Verdict& verdict) { self->OnVerdict(verdict); });
  }

  void OnVerdict(const http::Verdict& verdict) {
    if (!verdict.passed()) {
      return Write(http::MakeRejection(verdict, req_.version(), req_.keep_alive()));
    }
    Response res = Route(req_);
    http::ApplyVerdictHeaders(verdict, res);
    Write(std::move(res));
  }

  void Write(Response res) {
    res_ = std::move(res);
    bhttp::async_write(stream_, res_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || !self->res_.keep_alive()) return self->Close();
      self->Read();
    });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  http::Middleware* middleware_;
  tcp::endpoint peer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  Request req_;
  Response res_;
};

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
  explicit Impl(ApiServerOptions o)
      : options(std::move(o)),
        ioc(std::max(1, options.threads)),
        acceptor(ioc),
        accept_timer(ioc) {}

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      // Out of descriptors, accepting again at once would spin (accept_backoff.h): wait first.
      if (const std::chrono::milliseconds wait = backoff.After(ec); wait.count() > 0) {
        accept_timer.expires_after(wait);
        accept_timer.async_wait([this](beast::error_code timer_ec) {
          if (!timer_ec && acceptor.is_open()) Accept();
        });
        return;
      }
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(std::move(socket), options.middleware)->Run();
      }
      Accept();
    });
  }

  ApiServerOptions options;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer accept_timer;
  http::AcceptBackoff backoff;
  std::vector<std::thread> threads;
  uint16_t bound_port = 0;
};

ApiServer::ApiServer(ApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

ApiServer::~ApiServer() {
  // Stop() throws only when an I/O thread cannot be joined (std::system_error) or memory runs out,
  // which leaves no state to carry on from: end the process as the exception escaping this
  // destructor would have (the terminate handler still reports it).
  try {
    Stop();
  } catch (...) {
    std::terminate();
  }
}

absl::Status ApiServer::Start() {
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(impl_->options.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid address '", impl_->options.address, "'"));
  }
  const tcp::endpoint endpoint(address, impl_->options.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", impl_->options.address, ":",
                                               impl_->options.port, ": ", ec.message()));
  }
  impl_->bound_port = impl_->acceptor.local_endpoint().port();
  impl_->Accept();
  for (int i = 0; i < std::max(1, impl_->options.threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  }
  return absl::OkStatus();
}

void ApiServer::Stop() {
  if (impl_->threads.empty()) return;
  net::post(impl_->ioc, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->accept_timer.cancel();
  });
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
}

uint16_t ApiServer::port() const { return impl_->bound_port; }

}  // namespace sluice::examples
