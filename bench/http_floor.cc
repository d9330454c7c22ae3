// http_floor: what an HTTP/1.1 /json answer costs a server on this machine before any decision,
// to compare with sluiced's HTTP path (issue 12: can it be halved?). Two servers, both answering
// every request with one fixed /json body, no parsing of it, no decision:
//
// - `--server beast`: sluice::net::BeastServer (the server under sluiced's HTTP API) with a
//   handler that answers at once, on `--threads` I/O threads (sluiced's default is 2);
// - `--server raw`: the least a keep-alive HTTP/1.1 server can do on Boost.Asio: one thread,
//   each read scanned for the ends of the requests in it (Content-Length only), all their answers
//   written with one write.
//
// Not servers to use: bench/http_floor.sh measures their CPU per request beside sluiced's.
//
//   http_floor --server beast|raw [--threads N] [--port P]   (prints {"port":N} once listening)
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "sluice/net/beast_server.h"

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// What sluiced answers an allowed /json check of bench/config.
constexpr std::string_view kBody =
    R"({"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":1000000000,)"
    R"("unit":"MINUTE"},"limitRemaining":999999999,"durationUntilReset":"59s"}]})";

std::string RawAnswer() {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nServer: sluiced\r\n"
         "Content-Length: " +
         std::to_string(kBody.size()) + "\r\n\r\n" + std::string(kBody);
}

// One keep-alive connection of the raw server.
class RawConnection : public std::enable_shared_from_this<RawConnection> {
 public:
  RawConnection(tcp::socket socket, const std::string& answer)
      : socket_(std::move(socket)), answer_(answer) {}

  void Read() {
    socket_.async_read_some(
        net::buffer(in_.data() + used_, in_.size() - used_),
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          if (ec) return;
          self->used_ += n;
          self->Answer();
        });
  }

 private:
  // Answers every whole request in the buffer, keeps the rest for the next read.
  void Answer() {
    std::string_view data(in_.data(), used_);
    size_t answers = 0;
    for (;;) {
      const size_t end = data.find("\r\n\r\n");
      if (end == std::string_view::npos) break;
      size_t body = 0;
      if (const size_t at = data.substr(0, end).find("Content-Length: ");
          at != std::string_view::npos) {
        const char* digits = data.data() + at + 16;
        std::from_chars(digits, data.data() + end, body);
      }
      if (data.size() < end + 4 + body) break;
      data.remove_prefix(end + 4 + body);
      ++answers;
    }
    const size_t left = data.size();
    std::memmove(in_.data(), data.data(), left);
    used_ = left;
    if (used_ == in_.size()) return;  // A request larger than the buffer: give up.
    if (answers == 0) return Read();
    out_.clear();
    for (size_t i = 0; i < answers; ++i) out_ += answer_;
    net::async_write(socket_, net::buffer(out_),
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                       if (!ec) self->Read();
                     });
  }

  tcp::socket socket_;
  const std::string& answer_;
  std::array<char, 16384> in_{};
  size_t used_ = 0;
  std::string out_;
};

void AcceptRaw(tcp::acceptor& acceptor, const std::string& answer) {
  acceptor.async_accept(
      [&acceptor, &answer](const boost::system::error_code& ec, tcp::socket socket) {
        if (!ec) {
          socket.set_option(tcp::no_delay(true));
          std::make_shared<RawConnection>(std::move(socket), answer)->Read();
        }
        AcceptRaw(acceptor, answer);
      });
}

int RunRaw(uint16_t port) {
  net::io_context context(1);
  tcp::acceptor acceptor(context, tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  std::printf("{\"port\":%u}\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  const std::string answer = RawAnswer();
  AcceptRaw(acceptor, answer);
  context.run();
  return 0;
}

int RunBeast(uint16_t port, int threads) {
  namespace bhttp = boost::beast::http;
  using sluice::net::BeastServer;
  BeastServer server({.port = port, .threads = threads, .server_header = "sluiced"},
                     [](BeastServer::Request& /*request*/, const tcp::endpoint& /*peer*/,
                        BeastServer::Responder respond) {
                       BeastServer::Response response(bhttp::status::ok, 11);
                       response.set(bhttp::field::content_type, "application/json");
                       response.body() = kBody;
                       std::move(respond)(std::move(response));
                     });
  if (absl::Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("{\"port\":%u}\n", server.port());
  std::fflush(stdout);
  net::io_context signals_context(1);
  net::signal_set signals(signals_context, SIGINT, SIGTERM);
  signals.async_wait([](const boost::system::error_code&, int) {});
  signals_context.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string_view server = "beast";
  uint16_t port = 0;
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--server") {
      server = argv[i + 1];
    } else if (flag == "--port") {
      port = static_cast<uint16_t>(std::atoi(argv[i + 1]));
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: http_floor --server beast|raw [--threads N] [--port P]\n");
      return 2;
    }
  }
  if (server == "raw") return RunRaw(port);
  if (server == "beast") return RunBeast(port, threads);
  std::fprintf(stderr, "--server must be beast or raw\n");
  return 2;
}
