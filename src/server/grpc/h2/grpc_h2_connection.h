// One HTTP/2 connection of GrpcH2Server (grpc_h2_server.h), and the state its connections share.
// Internal to the engine.
//
// Thread safety: a Connection lives on one io_context thread; every member but executor() and
// the constructor runs there. Shared's members are thread-safe as marked.
#ifndef SLUICE_SERVER_GRPC_H2_GRPC_H2_CONNECTION_H_
#define SLUICE_SERVER_GRPC_H2_GRPC_H2_CONNECTION_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nghttp2/nghttp2.h>

#include "src/net/tcp_listener.h"
#include "src/server/grpc/h2/grpc_h2_server.h"
#include "src/util/mutex.h"

namespace sluice::server::h2 {

struct GrpcH2Server::Shared {
  GrpcH2ServerOptions options;
  absl::flat_hash_map<std::string, UnaryMethod> methods;
  std::atomic<bool> serving{false};
  // Request bytes held over all connections.
  std::atomic<size_t> buffered{0};
  std::atomic<uint64_t> silent_closed{0};
  internal::Mutex mu;
  size_t open ABSL_GUARDED_BY(mu) = 0;
  std::condition_variable_any closed;  // Each time `open` goes down.
  // Every connection, for Stop(); expired ones are pruned as new ones come.
  std::vector<std::weak_ptr<Connection>> connections ABSL_GUARDED_BY(mu);

  void Log(std::string_view line) const;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Socket = ::sluice::net::internal::TcpListener::Socket;
  using Executor = boost::asio::io_context::executor_type;

  // `context` runs `socket`'s executor; held so that it outlives the socket.
  Connection(Socket socket, std::shared_ptr<boost::asio::io_context> context,
             std::shared_ptr<GrpcH2Server::Shared> shared);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // Each posts itself onto the connection's thread.
  void Start();
  // GOAWAY: no new calls; closes once the calls in flight are answered.
  void Drain();
  // Closes at once.
  void Abort();
  // Answers a call, from any thread.
  void Answer(int32_t stream_id, absl::StatusOr<std::string> response);
  Executor executor() { return socket_.get_executor(); }
  // True until the client's first bytes arrive. Thread-safe.
  bool silent() const { return !spoke_.load(std::memory_order_relaxed); }
  // True the first time only: the caller may then close this connection to make room at the cap.
  // Thread-safe.
  bool ClaimToMakeRoom() { return !claimed_.exchange(true); }

 private:
  struct Stream {
    enum class Kind : uint8_t { kUnknown, kMethod, kHealthCheck };
    Kind kind = Kind::kUnknown;
    const UnaryMethod* method = nullptr;
    std::string path;
    bool post = false;
    bool grpc_content_type = false;
    size_t header_bytes = 0;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    std::string body;  // The request as received, until it is answered.
    bool answered = false;
    std::string response;  // The framed message being sent.
    size_t sent = 0;
  };
  static nghttp2_session_callbacks* Callbacks();
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_length, const uint8_t* value, size_t value_length, uint8_t flags,
                      void* user);
  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnData(nghttp2_session*, uint8_t flags, int32_t stream_id, const uint8_t* data,
                    size_t length, void* user);
  static int OnFrameSent(nghttp2_session* session, const nghttp2_frame* frame, void* user);
  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user);
  static ssize_t ReadResponse(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                              size_t length, uint32_t* flags, nghttp2_data_source* source,
                              void* user);

  struct PendingAnswer {
    int32_t stream_id;
    absl::StatusOr<std::string> response;
  };
  // On the connection's thread: the answers other threads left, then one flush.
  void AnswerPending();
  void AnswerHere(int32_t stream_id, absl::StatusOr<std::string> response);
  Stream* Find(int32_t stream_id);
  void OnRequestHeaders(int32_t stream_id, Stream& stream);
  void OnRequestEnd(int32_t stream_id, Stream& stream);
  // Answers once: the message (OK) or a trailers-only status.
  void Reply(int32_t stream_id, Stream& stream, absl::StatusOr<std::string> response);
  void ReplyHttp(int32_t stream_id, Stream& stream, const char* status);
  void ReleaseBody(Stream& stream);
  void Read();
  void Flush();
  void ArmTimer();
  void OnTimer();
  void Close();

  std::shared_ptr<boost::asio::io_context> context_;  // Before socket_: outlives it.
  Socket socket_;
  std::shared_ptr<GrpcH2Server::Shared> shared_;
  const GrpcH2ServerOptions& options_;
  std::string peer_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, Stream> streams_;  // Node-based: a Stream& stays valid.
  size_t buffered_ = 0;                          // Request bytes held over all streams.
  std::array<uint8_t, 16384> in_{};
  std::string out_;
  bool writing_ = false;
  bool in_recv_ = false;  // nghttp2 must not be asked to send from inside its callbacks.
  bool draining_ = false;
  bool closed_ = false;
  std::atomic<bool> spoke_{false};    // Read on the listener's thread (make room at the cap).
  std::atomic<bool> claimed_{false};  // Chosen to make room.
  // Answers made on other threads, for AnswerPending(); while it is not empty, a handler that
  // will take them is posted.
  internal::Mutex answers_mu_;
  std::vector<PendingAnswer> answers_ ABSL_GUARDED_BY(answers_mu_);
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point last_active_;
  std::optional<std::chrono::steady_clock::time_point> age_at_;
  // Closed then unless its first bytes came (options_.first_bytes_timeout).
  std::optional<std::chrono::steady_clock::time_point> silent_until_;
  std::optional<std::chrono::steady_clock::time_point> grace_at_;
};

}  // namespace sluice::server::h2

#endif  // SLUICE_SERVER_GRPC_H2_GRPC_H2_CONNECTION_H_
