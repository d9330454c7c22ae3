// H2Client: a blocking HTTP/2 client on nghttp2, to speak gRPC's wire format to the nghttp2
// engine byte by byte (tests/server/grpc_h2_server_test.cc) without gRPC C++ in the test.
//
// Example:
//   H2Client client(port);
//   const int32_t id = client.Send({.path = "/pkg.S/M", .body = FramedMessage("x")});
//   H2Client::Response r = client.Await(id);
//
// Thread safety: not thread-safe.
#ifndef SLUICE_TESTS_TESTING_H2_CLIENT_H_
#define SLUICE_TESTS_TESTING_H2_CLIENT_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sluice::testing {

class H2Client {
 public:
  struct Request {
    std::string path;
    std::string body;
    // Ends the request with the body; false leaves the stream open after it.
    bool end = true;
    std::string method = "POST";
    std::string content_type = "application/grpc";
    std::vector<std::pair<std::string, std::string>> headers{};
  };
  struct Response {
    std::map<std::string, std::string> headers;   // The first HEADERS frame.
    std::map<std::string, std::string> trailers;  // A second one, if any.
    std::string data;
    bool closed = false;
    uint32_t reset_code = 0;  // RST_STREAM's code, or the close's error code.
  };

  explicit H2Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    // Each frame goes at once: no waiting for an ACK the server delays.
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nghttp2_session_callbacks* c = nullptr;
    nghttp2_session_callbacks_new(&c);
    nghttp2_session_callbacks_set_send_callback(c, &OnSend);
    nghttp2_session_callbacks_set_on_header_callback(c, &OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, &OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, &OnClose);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, &OnFrame);
    nghttp2_session_client_new(&session_, c, this);
    nghttp2_session_callbacks_del(c);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
    nghttp2_session_send(session_);
  }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;
  ~H2Client() {
    nghttp2_session_del(session_);
    if (fd_ >= 0) ::close(fd_);
  }

  bool connected() const { return connected_; }

  int32_t Send(const Request& r) {
    Body& body = bodies_.emplace_back(Body{r.body, 0, r.end});
    std::vector<nghttp2_nv> nv = {Nv(":method", r.method),
                                  Nv(":scheme", "http"),
                                  Nv(":path", r.path),
                                  Nv(":authority", "localhost"),
                                  Nv("content-type", r.content_type),
                                  Nv("te", "trailers")};
    for (const auto& [name, value] : r.headers) nv.push_back(Nv(name, value));
    nghttp2_data_provider provider{};
    provider.source.ptr = &body;
    provider.read_callback = &ReadBody;
    const int32_t id =
        nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), &provider, nullptr);
    nghttp2_session_send(session_);
    return id;
  }

  void Reset(int32_t id) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    nghttp2_session_send(session_);
  }

  // Reads until `done` or `timeout`; false on timeout. The connection's end counts as done.
  bool PumpUntil(const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (eof_) return done();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      uint8_t buf[16384];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      nghttp2_session_mem_recv(session_, buf, static_cast<size_t>(n));
      nghttp2_session_send(session_);
    }
    return true;
  }

  Response Await(int32_t id) {
    PumpUntil([&] { return responses_[id].closed; });
    return responses_[id];
  }

  bool goaway() const { return goaway_; }
  bool eof() const { return eof_; }
  uint32_t RemoteSetting(nghttp2_settings_id id) {
    return nghttp2_session_get_remote_settings(session_, id);
  }

 private:
  struct Body {
    std::string bytes;
    size_t sent;
    bool end;
  };

  // Views: literals, or the request's strings (nghttp2 copies them when the request is submitted).
  static nghttp2_nv Nv(std::string_view name, std::string_view value) {
    return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP2_NV_FLAG_NONE};
  }

  static ssize_t OnSend(nghttp2_session*, const uint8_t* data, size_t length, int, void* user) {
    auto* self = static_cast<H2Client*>(user);
    size_t done = 0;
    while (done < length) {
      const ssize_t n = ::send(self->fd_, data + done, length - done, MSG_NOSIGNAL);
      if (n <= 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
      done += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(length);
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* body = static_cast<Body*>(source->ptr);
    const size_t n = std::min(length, body->bytes.size() - body->sent);
    std::memcpy(buf, body->bytes.data() + body->sent, n);
    body->sent += n;
    if (body->sent == body->bytes.size()) {
      if (!body->end && n == 0) return NGHTTP2_ERR_DEFERRED;
      if (body->end) *flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return static_cast<ssize_t>(n);
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_length, const uint8_t* value, size_t value_length, uint8_t,
                      void* user) {
    auto* self = static_cast<H2Client*>(user);
    Response& r = self->responses_[frame->hd.stream_id];
    auto& into = frame->headers.cat == NGHTTP2_HCAT_HEADERS ? r.trailers : r.headers;
    into[std::string(reinterpret_cast<const char*>(name), name_length)] =
        std::string(reinterpret_cast<const char*>(value), value_length);
    return 0;
  }

  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t length,
                    void* user) {
    static_cast<H2Client*>(user)->responses_[id].data.append(reinterpret_cast<const char*>(data),
                                                             length);
    return 0;
  }

  static int OnClose(nghttp2_session*, int32_t id, uint32_t error_code, void* user) {
    Response& r = static_cast<H2Client*>(user)->responses_[id];
    r.closed = true;
    r.reset_code = error_code;
    return 0;
  }

  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_GOAWAY) static_cast<H2Client*>(user)->goaway_ = true;
    return 0;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  bool goaway_ = false;
  nghttp2_session* session_ = nullptr;
  std::deque<Body> bodies_;  // Grows at the end only: nghttp2 holds pointers into it.
  std::map<int32_t, Response> responses_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_H2_CLIENT_H_
