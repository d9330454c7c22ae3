// Helpers for descriptor-exhaustion tests: idle TCP connections held open against a server, and
// the CPU time a process has used.
//
// Example:
//   IdleConnections held(port, 200);   // connected (accepted or still in the backlog)
//   const double cpu = ProcessCpuSeconds(pid);
//   held.Release();
//
// Thread safety: not thread-safe.
#ifndef SLUICE_TESTS_TESTING_IDLE_CONNECTIONS_H_
#define SLUICE_TESTS_TESTING_IDLE_CONNECTIONS_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
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

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_IDLE_CONNECTIONS_H_
