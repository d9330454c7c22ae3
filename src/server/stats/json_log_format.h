// JsonLogFormatter: spdlog lines as the reference writes them with LOG_FORMAT=json (logrus's JSON
// formatter with @timestamp and @message, time in Go's RFC3339Nano), one object a line:
//   {"@timestamp":"2026-12-03T10:00:00.123456789Z","level":"warning","@message":"..."}
// Levels carry logrus's names (trace, debug, info, warning, error, fatal); the message is escaped
// as JSON, and bytes that are not UTF-8 become U+FFFD, so any text stays one valid object.
//
// Example:
//   spdlog::set_formatter(std::make_unique<JsonLogFormatter>());
//
// Thread safety: as spdlog's formatters (one per sink, called under the sink's lock).
#ifndef SLUICE_SERVER_STATS_JSON_LOG_FORMAT_H_
#define SLUICE_SERVER_STATS_JSON_LOG_FORMAT_H_

#include <memory>

#include "spdlog/formatter.h"

namespace sluice::server {

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLogFormatter>();
  }
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_STATS_JSON_LOG_FORMAT_H_
