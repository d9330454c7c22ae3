// H2FuzzClient: the client side of grpc_h2_fuzzer.cc. One loopback TCP connection with an nghttp2
// client session on it, whose frames the caller submits; raw bytes can go between them, and
// everything the server sends is fed back to the session, which records each stream's answer.
//
// Unlike tests/testing/h2_client.h it never blocks without a bound: every wait ends after kBound,
// and it writes and reads at once, so neither side can wait for the other with full buffers.
//
// Thread safety: not thread-safe.
#ifndef SLUICE_FUZZ_GRPC_H2_FUZZ_CLIENT_H_
#define SLUICE_FUZZ_GRPC_H2_FUZZ_CLIENT_H_

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
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

namespace sluice::fuzz {

// How long the server gets for anything asked of it; past it, a wait is a hang. Generous, as the
// replayed corpus also runs under ASan on a loaded machine.
inline constexpr std::chrono::seconds kBound{5};

class H2FuzzClient {
 public:
  using Fields = std::vector<std::pair<std::string, std::string>>;
  struct Stream {
    int32_t id = 0;
    bool echo = false;  // Its method answers with the request.
    std::string body;   // Every DATA byte it sends, sent or not yet.
    size_t sent = 0;
    bool end = false;       // The body ends the request...
    bool trailers = false;  // ... with a trailers HEADERS frame instead of END_STREAM on DATA.
    bool ended = false;     // END_STREAM has been sent.
    bool reset = false;     // The client reset it.
    bool closed = false;
    uint32_t error = 0;          // RST_STREAM's code (either side's), when closed.
    std::vector<Fields> answer;  // Each HEADERS frame received: the headers, then trailers.
    std::string data;            // DATA received.
  };

  explicit H2FuzzClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) eof_ = true;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nghttp2_session_callbacks* c = nullptr;
    nghttp2_session_callbacks_new(&c);
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, &OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(c, &OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, &OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, &OnFrame);
    nghttp2_session_callbacks_set_on_frame_send_callback(c, &OnFrameSent);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, &OnClose);
    nghttp2_session_client_new(&session_, c, this);
    nghttp2_session_callbacks_del(c);
  }
  H2FuzzClient(const H2FuzzClient&) = delete;
  H2FuzzClient& operator=(const H2FuzzClient&) = delete;
  ~H2FuzzClient() {
    nghttp2_session_del(session_);
    ::close(fd_);
  }

  nghttp2_session* session() { return session_; }
  std::deque<Stream>& streams() { return streams_; }
  const std::deque<Stream>& streams() const { return streams_; }
  // The server closed the connection (or it never opened).
  bool eof() const { return eof_; }
  // The connection is gone for writing.
  bool broken() const { return broken_; }
  size_t written() const { return written_; }
  // The error code of the GOAWAY received, if one was.
  std::optional<uint32_t> goaway() const { return goaway_; }
  // Why the session refused what the server sent; empty while it accepts everything.
  const std::string& recv_error() const { return recv_error_; }

  // Submits a request (the headers are copied). Returns its stream, or nullptr when the session
  // refuses to open one (after GOAWAY, or for stream ids exhausted).
  Stream* Submit(const Fields& headers, Stream stream) {
    Stream& s = streams_.emplace_back(std::move(stream));
    std::vector<nghttp2_nv> nv;
    for (const auto& [name, value] : headers) nv.push_back(Nv(name, value));
    nghttp2_data_provider provider{};
    provider.source.ptr = &s;
    provider.read_callback = &ReadBody;
    const bool headers_only = s.end && s.body.empty() && !s.trailers;
    s.id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                  headers_only ? nullptr : &provider, &s);
    if (s.id > 0) return &s;
    streams_.pop_back();
    return nullptr;
  }

  // Writes what the session has queued, until it queues nothing more; false as Write().
  bool Send() {
    std::string out;
    do {
      out.clear();
      for (;;) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n <= 0) break;
        out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      }
      // What Write() reads meanwhile may queue more (a WINDOW_UPDATE the server waits for).
      if (!Write(out)) return false;
    } while (!out.empty() && !broken_);
    return true;
  }

  // Writes `bytes` as they are, reading what the server sends meanwhile. Returns false when the
  // server neither read nor wrote for kBound.
  bool Write(std::string_view bytes) {
    const Clock::time_point until = Clock::now() + kBound;
    while (!bytes.empty() && !broken_) {
      const int16_t ready = Poll(static_cast<int16_t>(POLLOUT | (eof_ ? 0 : POLLIN)), until);
      if (ready == 0) return false;
      if ((ready & POLLIN) != 0) ReadOnce();
      if ((ready & (POLLOUT | POLLERR | POLLHUP)) == 0) continue;
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        bytes.remove_prefix(static_cast<size_t>(n));
        written_ += static_cast<size_t>(n);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        broken_ = true;  // The server closed it.
      }
    }
    return true;
  }

  // Exchanges frames until `done` or the server's close. Returns false when kBound passes first.
  bool Pump(const std::function<bool()>& done) {
    const Clock::time_point until = Clock::now() + kBound;
    if (!Send()) return false;
    while (!done() && !eof_) {
      if (Poll(POLLIN, until) == 0) return false;
      ReadOnce();
      if (!Send()) return false;
    }
    return true;
  }

  // Half-closes, then reads until the server closes. Returns false when kBound passes first.
  bool AwaitClose() {
    ::shutdown(fd_, SHUT_WR);
    const Clock::time_point until = Clock::now() + kBound;
    while (!eof_) {
      if (Poll(POLLIN, until) == 0) return false;
      ReadOnce();
    }
    return true;
  }

  // Feeds what arrives to the session; false leaves it unread by the session (raw mode).
  void set_parse(bool parse) { parse_ = parse; }

 private:
  using Clock = std::chrono::steady_clock;

  // The events of `events` that are ready, or 0 once `until` passes. A signal does not end the
  // wait: libFuzzer's -timeout timer (SIGALRM) interrupts it now and then.
  int16_t Poll(int16_t events, Clock::time_point until) const {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return 0;
      pollfd p{fd_, events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(left));
      if (n > 0) return p.revents;
      if (n < 0 && errno != EINTR) return POLLERR;
    }
  }

  // Views: nghttp2 copies them when the frame is submitted.
  static nghttp2_nv Nv(std::string_view name, std::string_view value) {
    return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP2_NV_FLAG_NONE};
  }

  void ReadOnce() {
    uint8_t buf[16384];
    ssize_t n = 0;
    do {
      n = ::read(fd_, buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      eof_ = true;  // Closed, or reset after unread bytes.
      return;
    }
    if (!parse_ || !recv_error_.empty()) return;
    const ssize_t rv = nghttp2_session_mem_recv(session_, buf, static_cast<size_t>(n));
    if (rv < 0) recv_error_ = nghttp2_strerror(static_cast<int>(rv));
  }

  static Stream* Find(nghttp2_session* session, int32_t id) {
    return static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  }

  static ssize_t ReadBody(nghttp2_session* session, int32_t id, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, s->body.size() - s->sent);
    std::memcpy(buf, s->body.data() + s->sent, n);
    s->sent += n;
    if (s->sent < s->body.size()) return static_cast<ssize_t>(n);
    if (!s->end) return n == 0 ? ssize_t{NGHTTP2_ERR_DEFERRED} : static_cast<ssize_t>(n);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (s->trailers) {
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const nghttp2_nv trailer[] = {Nv("x-trailer", "t")};
      nghttp2_submit_trailer(session, id, trailer, 1);
    }
    return static_cast<ssize_t>(n);
  }

  static int OnBeginHeaders(nghttp2_session* session, const nghttp2_frame* frame, void*) {
    if (Stream* s = Find(session, frame->hd.stream_id)) s->answer.emplace_back();
    return 0;
  }

  static int OnHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_length, const uint8_t* value, size_t value_length, uint8_t,
                      void*) {
    Stream* s = Find(session, frame->hd.stream_id);
    if (s == nullptr || s->answer.empty()) return 0;
    s->answer.back().emplace_back(std::string(reinterpret_cast<const char*>(name), name_length),
                                  std::string(reinterpret_cast<const char*>(value), value_length));
    return 0;
  }

  static int OnData(nghttp2_session* session, uint8_t, int32_t id, const uint8_t* data,
                    size_t length, void*) {
    if (Stream* s = Find(session, id)) s->data.append(reinterpret_cast<const char*>(data), length);
    return 0;
  }

  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      static_cast<H2FuzzClient*>(user)->goaway_ = frame->goaway.error_code;
    }
    return 0;
  }

  static int OnFrameSent(nghttp2_session* session, const nghttp2_frame* frame, void*) {
    const bool request_frame = frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA;
    if (request_frame && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      if (Stream* s = Find(session, frame->hd.stream_id)) s->ended = true;
    }
    return 0;
  }

  static int OnClose(nghttp2_session* session, int32_t id, uint32_t error, void*) {
    if (Stream* s = Find(session, id)) {
      s->closed = true;
      s->error = error;
    }
    return 0;
  }

  int fd_ = -1;
  nghttp2_session* session_ = nullptr;
  std::deque<Stream> streams_;  // Grows at the end only: the session holds pointers into it.
  bool parse_ = true;
  bool eof_ = false;
  bool broken_ = false;
  size_t written_ = 0;
  std::optional<uint32_t> goaway_;
  std::string recv_error_;
};

}  // namespace sluice::fuzz

#endif  // SLUICE_FUZZ_GRPC_H2_FUZZ_CLIENT_H_
