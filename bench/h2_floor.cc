// h2_floor: the least a unary gRPC server can cost per call on this machine, to compare with
// sluiced's gRPC path (issue 12: is gRPC C++ the floor?). It answers every request on any path
// with one fixed RateLimitResponse (overall_code OK) and grpc-status 0: no parsing, no decision,
// no bounds. One thread, plain TCP, HTTP/2 by nghttp2 (libnghttp2-dev), sockets by Boost.Asio.
// Not a server to use: bench/h2_floor.sh measures its CPU per call beside sluiced's.
//
//   h2_floor --port 0   (prints {"port":N} once listening; runs until killed)
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <nghttp2/nghttp2.h>

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// The gRPC message: no compression flag, length 2, RateLimitResponse{overall_code: OK (1)}.
constexpr std::array<uint8_t, 7> kMessage = {0, 0, 0, 0, 2, 0x08, 0x01};

nghttp2_nv Header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(tcp::socket socket) : socket_(std::move(socket)) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &OnFrame);
    nghttp2_session_server_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_settings_entry settings{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, &settings, 1);
  }
  ~Connection() { nghttp2_session_del(session_); }

  void Start() {
    Flush();
    Read();
  }

 private:
  // Each stream is answered when its request ends; the request's bytes are not looked at.
  static int OnFrame(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    if ((frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) ||
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
      return 0;
    }
    auto* self = static_cast<Connection*>(user);
    static const std::array<nghttp2_nv, 2> kHeaders = {Header(":status", "200"),
                                                       Header("content-type", "application/grpc")};
    nghttp2_data_provider provider{};
    provider.read_callback = &ReadBody;
    nghttp2_submit_response(session, frame->hd.stream_id, kHeaders.data(), kHeaders.size(),
                            &provider);
    (void)self;
    return 0;
  }

  // The body is the fixed message; the stream then ends with the trailers.
  static ssize_t ReadBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source*, void*) {
    if (length < kMessage.size()) return NGHTTP2_ERR_CALLBACK_FAILURE;
    std::memcpy(buf, kMessage.data(), kMessage.size());
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    static const std::array<nghttp2_nv, 1> kTrailers = {Header("grpc-status", "0")};
    nghttp2_submit_trailer(session, stream_id, kTrailers.data(), kTrailers.size());
    return static_cast<ssize_t>(kMessage.size());
  }

  void Read() {
    socket_.async_read_some(net::buffer(in_), [self = shared_from_this()](
                                                  const boost::system::error_code& ec, size_t n) {
      if (ec) return;
      if (nghttp2_session_mem_recv(self->session_, self->in_.data(), n) < 0) return;
      self->Flush();
      self->Read();
    });
  }

  // Gathers everything nghttp2 has to send into one write; one write at a time.
  void Flush() {
    if (writing_) return;
    out_.clear();
    for (;;) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n <= 0) break;
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out_.empty()) return;
    writing_ = true;
    net::async_write(socket_, net::buffer(out_),
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                       self->writing_ = false;
                       if (!ec) self->Flush();
                     });
  }

  tcp::socket socket_;
  nghttp2_session* session_ = nullptr;
  std::array<uint8_t, 16384> in_{};
  std::string out_;
  bool writing_ = false;
};

void Accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](const boost::system::error_code& ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true));
      std::make_shared<Connection>(std::move(socket))->Start();
    }
    Accept(acceptor);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const uint16_t port =
      (argc == 3 && std::string_view(argv[1]) == "--port") ? std::atoi(argv[2]) : 0;
  net::io_context context(1);
  tcp::acceptor acceptor(context, tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  std::printf("{\"port\":%u}\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  Accept(acceptor);
  context.run();
}
