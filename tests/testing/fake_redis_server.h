// FakeRedisServer: a scripted RESP server on a free loopback port, for client tests of what a real
// redis-server will not do (announce a 3 GB reply, trickle one, close during the handshake).
//
// Each accepted connection gets its own thread, which parses RESP commands and hands each one to
// the handler. The handler answers through the Connection (Write, Close), and may keep writing
// slowly until Stopping() says the server is going away.
//
// Example:
//   FakeRedisServer server([](FakeRedisServer::Connection& c, const std::vector<std::string>& argv) {
//     c.Write(argv[0] == "PING" ? "+PONG\r\n" : "$3000000000\r\n");
//   });
//   auto url = ParseStoreUrl(server.Url());
//
// Thread safety: the handler runs on connection threads, one per connection, concurrently.
#ifndef SLUICE_TESTS_TESTING_FAKE_REDIS_SERVER_H_
#define SLUICE_TESTS_TESTING_FAKE_REDIS_SERVER_H_

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/util/mutex.h"

namespace sluice::testing {

class FakeRedisServer {
 public:
  class Connection {
   public:
    explicit Connection(int fd, const std::atomic<bool>& stopping)
        : fd_(fd), stopping_(stopping) {}
    // Writes all of `bytes`; false once the peer is gone.
    bool Write(std::string_view bytes) {
      while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<size_t>(n));
      }
      return true;
    }
    // Closes the connection after the handler returns.
    void Close() { close_ = true; }
    bool Stopping() const { return stopping_.load(); }
    bool closing() const { return close_; }

   private:
    int fd_;
    const std::atomic<bool>& stopping_;
    bool close_ = false;
  };

  using Handler = std::function<void(Connection&, const std::vector<std::string>& argv)>;

  explicit FakeRedisServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 64) != 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
      return;
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  FakeRedisServer(const FakeRedisServer&) = delete;
  FakeRedisServer& operator=(const FakeRedisServer&) = delete;
  ~FakeRedisServer() {
    stopping_ = true;
    if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
    if (accept_thread_.joinable()) accept_thread_.join();
    std::vector<std::thread> threads;
    {
      internal::MutexLock lock(&mu_);
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }

  bool ok() const { return listen_fd_ >= 0; }
  uint16_t port() const { return port_; }
  std::string Url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) {
        if (errno == EINTR) continue;
        return;  // Shut down.
      }
      accepted_.fetch_add(1);
      internal::MutexLock lock(&mu_);
      open_fds_.push_back(fd);
      threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Returns the next complete command in `buf` (consumed), or nullopt when more bytes are needed.
  static std::optional<std::vector<std::string>> TakeCommand(std::string& buf) {
    size_t pos = 0;
    auto line = [&]() -> std::optional<std::string> {
      const size_t end = buf.find("\r\n", pos);
      if (end == std::string::npos) return std::nullopt;
      std::string out = buf.substr(pos, end - pos);
      pos = end + 2;
      return out;
    };
    std::optional<std::string> head = line();
    if (!head || head->empty() || (*head)[0] != '*') return std::nullopt;
    const int n = std::stoi(head->substr(1));
    std::vector<std::string> argv;
    for (int i = 0; i < n; ++i) {
      std::optional<std::string> len = line();
      if (!len) return std::nullopt;
      const size_t size = std::stoul(len->substr(1));
      if (buf.size() < pos + size + 2) return std::nullopt;
      argv.push_back(buf.substr(pos, size));
      pos += size + 2;
    }
    buf.erase(0, pos);
    return argv;
  }

  void Serve(int fd) {
    Connection connection(fd, stopping_);
    std::string buf;
    char chunk[4096];
    while (!stopping_ && !connection.closing()) {
      const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
      while (!connection.closing()) {
        std::optional<std::vector<std::string>> argv = TakeCommand(buf);
        if (!argv) break;
        handler_(connection, *argv);
      }
    }
    internal::MutexLock lock(&mu_);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    std::erase(open_fds_, fd);
  }

  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread accept_thread_;
  internal::Mutex mu_;
  std::vector<int> open_fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_FAKE_REDIS_SERVER_H_
