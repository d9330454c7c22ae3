// Helpers for descriptor-exhaustion tests: idle TCP connections held open against a server, the
// CPU time a process has used, whether the server closed a connection, and the listening socket
// of this process on a port.
//
// Example:
//   IdleConnections held(port, 200);   // connected (accepted or still in the backlog)
//   const double cpu = ProcessCpuSeconds(pid);
//   held.Release();
//
// Thread safety: not thread-safe.
#ifndef SLUICE_TESTS_TESTING_IDLE_CONNECTIONS_H_
#define SLUICE_TESTS_TESTING_IDLE_CONNECTIONS_H_

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

namespace sluice::testing {

class IdleConnections {
 public:
  // Opens `count` connections to 127.0.0.1:`port` and sends nothing on them. A connect completes
  // once the kernel queues the connection, whether or not the server has accepted it.
  IdleConnections(int port, int count) {
    for (int i = 0; i < count; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0) break;
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        break;
      }
      fds_.push_back(fd);
    }
  }
  IdleConnections(const IdleConnections&) = delete;
  IdleConnections& operator=(const IdleConnections&) = delete;
  ~IdleConnections() { Release(); }

  size_t size() const { return fds_.size(); }
  int fd(size_t i) const { return fds_[i]; }

  // Closes every connection.
  void Release() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }

 private:
  std::vector<int> fds_;
};

// ProcessCpuSeconds()
//
// Returns the user plus system CPU time process `pid` has used, from /proc/<pid>/stat; -1 if it
// cannot be read.
inline double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name, in parentheses, may hold spaces: fields are counted after its ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0;  // NOLINT(google-runtime-int): the format's type.
  unsigned long long stime = 0;  // NOLINT(google-runtime-int)
  // Field 3 is the state; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ClosedByPeer()
//
// Reads `fd` (discarding what arrives) until the peer closes it or resets it: true; false when
// `timeout` passes first. A watchdog, not a measurement.
inline bool ClosedByPeer(int fd, std::chrono::seconds timeout) {
  timeval tv{.tv_sec = static_cast<time_t>(timeout.count()), .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

// ClosedByPeerNow()
//
// Whether the peer has closed or reset `fd` by now (what it sent, if anything, stays unread).
inline bool ClosedByPeerNow(int fd) {
  char byte = 0;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
}

// ListeningSocketFd()
//
// The descriptor of this process's listening TCP socket on `port`, or -1.
inline int ListeningSocketFd(int port) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    int listening = 0;
    socklen_t length = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || !listening) {
      continue;
    }
    sockaddr_storage addr{};
    socklen_t addr_length = sizeof(addr);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_length) != 0) continue;
    const uint16_t bound = addr.ss_family == AF_INET
                               ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                               : ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (bound == port) return fd;
  }
  return -1;
}

// ShutDownListeningSocket()
//
// Shuts down this process's listening socket on `port` under its server (Linux wakes a pending
// accept with EINVAL), as a socket that fails for good would; false when there is none.
inline bool ShutDownListeningSocket(int port) {
  const int fd = ListeningSocketFd(port);
  return fd >= 0 && ::shutdown(fd, SHUT_RDWR) == 0;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_IDLE_CONNECTIONS_H_
