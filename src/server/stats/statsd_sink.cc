#include "src/server/stats/statsd_sink.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sluice::server {
namespace {

// As the reference's stats library cleans tag values.
std::string CleanTagValue(std::string value) {
  for (char& c : value) {
    if (c == '.' || c == ':' || c == '|') c = '_';
  }
  return value;
}

}  // namespace

StatsdSink::StatsdSink(const Metrics& metrics, StatsdSettings settings)
    : metrics_(metrics), settings_(std::move(settings)) {
  std::vector<std::pair<std::string, std::string>> tags = settings_.tags;
  std::sort(tags.begin(), tags.end());
  for (const auto& [key, value] : tags) {
    if (key.empty() || value.empty()) continue;
    absl::StrAppend(&tag_suffix_, ".__", key, "=", CleanTagValue(value));
  }
}

StatsdSink::~StatsdSink() {
  Stop();
  if (fd_ >= 0) ::close(fd_);
}

absl::Status StatsdSink::Open() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(settings_.port);
  if (const int rc = ::getaddrinfo(settings_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("statsd ", settings_.host, ":", port, ": ", ::gai_strerror(rc)));
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    // A connected UDP socket: send() needs no address, and ICMP errors do not pile up.
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("statsd ", settings_.host, ":", port, ": ", std::strerror(errno)));
  }
  fd_ = fd;
  return absl::OkStatus();
}

absl::Status StatsdSink::Start() {
  if (absl::Status s = Open(); !s.ok()) return s;
  thread_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(absl::FromChrono(settings_.flush_interval))) {
      Flush();
    }
  });
  return absl::OkStatus();
}

void StatsdSink::Stop() {
  if (!thread_.joinable()) return;
  stop_.Notify();
  thread_.join();
  Flush();
}

std::vector<std::string> StatsdSink::Format(const std::vector<Metrics::Counter>& deltas) const {
  std::vector<std::string> datagrams;
  std::string current;
  for (const Metrics::Counter& c : deltas) {
    std::string line = absl::StrCat(c.name, tag_suffix_, ":", c.value, "|c\n");
    if (!current.empty() && current.size() + line.size() > kMaxDatagramBytes) {
      datagrams.push_back(std::move(current));
      current.clear();
    }
    current += line;
  }
  if (!current.empty()) datagrams.push_back(std::move(current));
  return datagrams;
}

std::vector<std::string> StatsdSink::FormatForTest(
    const std::vector<Metrics::Counter>& deltas) const {
  return Format(deltas);
}

size_t StatsdSink::Flush() {
  std::vector<Metrics::Counter> deltas;
  {
    internal::MutexLock lock(&mu_);
    for (Metrics::Counter& c : metrics_.Counters()) {
      uint64_t& last = last_[c.name];
      if (c.value == last) continue;
      const uint64_t delta = c.value - last;
      last = c.value;
      deltas.push_back({std::move(c.name), delta});
    }
  }
  if (fd_ < 0) return 0;
  for (const std::string& datagram : Format(deltas)) {
    // Best effort, as statsd over UDP is: a full buffer or an absent listener drops the datagram.
    (void)::send(fd_, datagram.data(), datagram.size(), MSG_NOSIGNAL);
  }
  return deltas.size();
}

}  // namespace sluice::server
