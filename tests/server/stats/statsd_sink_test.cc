// StatsdSink against a UDP listener on loopback: the reference's names, deltas, tags.
#include "src/server/stats/statsd_sink.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/server/stats/metrics.h"

namespace sluice::server {
namespace {

using ::testing::Contains;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

// A UDP socket on 127.0.0.1 and a free port.
class UdpListener {
 public:
  UdpListener() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~UdpListener() { ::close(fd_); }
  int port() const { return port_; }

  // The lines of every datagram that arrives within `wait_ms` of the previous one.
  std::vector<std::string> Lines(int wait_ms = 5000) {
    std::vector<std::string> lines;
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    while (::poll(&p, 1, wait_ms) == 1) {
      char buf[2048];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      for (absl::string_view line : absl::StrSplit(absl::string_view(buf, n), '\n')) {
        if (!line.empty()) lines.emplace_back(line);
      }
      wait_ms = 200;  // Watchdog for the rest of one flush, which arrives at once.
    }
    return lines;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(StatsdSink, SendsTheReferencesNamesAsCounterDeltas) {
  UdpListener listener;
  Metrics metrics;
  StatsdSink sink(metrics, {.enabled = true, .host = "127.0.0.1", .port = listener.port()});
  ASSERT_TRUE(sink.Open().ok());
  metrics.AddRuleStats("edge", "edge.remote_address_10.0.0.1",
                       {.total_hits = 3, .within_limit = 3});
  metrics.CountConfigLoad(true);
  EXPECT_EQ(sink.Flush(), 3u);
  EXPECT_THAT(listener.Lines(),
              UnorderedElementsAre(
                  "ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.total_hits:3|c",
                  "ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.within_limit:3|c",
                  "ratelimit.service.config_load_success:1|c"));
  // Only what changed since, as a delta.
  metrics.AddRuleStats("edge", "edge.remote_address_10.0.0.1", {.total_hits = 2, .over_limit = 2});
  EXPECT_EQ(sink.Flush(), 2u);
  EXPECT_THAT(listener.Lines(),
              UnorderedElementsAre(
                  "ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.total_hits:2|c",
                  "ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.over_limit:2|c"));
  EXPECT_EQ(sink.Flush(), 0u);
}

TEST(StatsdSink, AppendsExtraTagsSortedAndCleaned) {
  UdpListener listener;
  Metrics metrics;
  StatsdSink sink(metrics, {.enabled = true,
                            .host = "127.0.0.1",
                            .port = listener.port(),
                            .tags = {{"zone", "eu.west:1"}, {"env", "prod"}}});
  ASSERT_TRUE(sink.Open().ok());
  metrics.CountStoreError();
  sink.Flush();
  EXPECT_THAT(
      listener.Lines(),
      Contains(
          "ratelimit.service.call.should_rate_limit.redis_error.__env=prod.__zone=eu_west_1:1|c"));
}

TEST(StatsdSink, SplitsDatagramsAtTheSizeBound) {
  Metrics metrics;
  StatsdSink sink(metrics, {});
  std::vector<Metrics::Counter> many;
  for (int i = 0; i < 200; ++i)
    many.push_back({"ratelimit.service.rate_limit.d.k" + std::to_string(i), 1});
  const std::vector<std::string> datagrams = sink.FormatForTest(many);
  ASSERT_GT(datagrams.size(), 1u);
  size_t lines = 0;
  for (const std::string& d : datagrams) {
    EXPECT_LE(d.size(), StatsdSink::kMaxDatagramBytes);
    lines += std::count(d.begin(), d.end(), '\n');
  }
  EXPECT_EQ(lines, 200u);
}

TEST(StatsdSink, StartFlushesOnItsIntervalAndOnStop) {
  UdpListener listener;
  Metrics metrics;
  StatsdSink sink(metrics, {.enabled = true,
                            .host = "127.0.0.1",
                            .port = listener.port(),
                            .flush_interval = std::chrono::milliseconds(20)});
  ASSERT_TRUE(sink.Start().ok());
  metrics.CountConfigLoad(false);
  EXPECT_THAT(listener.Lines(), Contains("ratelimit.service.config_load_error:1|c"));
  metrics.CountConfigLoad(false);
  sink.Stop();
  EXPECT_THAT(listener.Lines(), Contains("ratelimit.service.config_load_error:1|c"));
  EXPECT_THAT(listener.Lines(200), Not(Contains("ratelimit.service.config_load_error:1|c")));
}

}  // namespace
}  // namespace sluice::server
