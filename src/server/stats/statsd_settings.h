// StatsdSettings: where and how often the statsd sink (statsd_sink.h) sends sluiced's counters;
// part of sluiced's settings (src/server/settings.h: STATSD_HOST, STATSD_PORT, EXTRA_TAGS, ...),
// apart so that the sink does not know the process's settings.
//
// Example:
//   StatsdSettings settings{.enabled = true, .host = "127.0.0.1"};
//
// Thread safety: a value type.
#ifndef SLUICE_SERVER_STATS_STATSD_SETTINGS_H_
#define SLUICE_SERVER_STATS_STATSD_SETTINGS_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace sluice::server {

struct StatsdSettings {
  bool enabled = false;
  std::string host = "localhost";
  int port = 8125;
  // EXTRA_TAGS, appended to every name as the reference's stats library does (".__key=value").
  std::vector<std::pair<std::string, std::string>> tags{};
  std::chrono::milliseconds flush_interval{10'000};
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_STATS_STATSD_SETTINGS_H_
