// LogCapture: collects what spdlog's default logger writes while it is alive, for tests of log
// lines (what is logged, and how often).
//
// Example:
//   LogCapture logs;
//   store->Check(...);
//   EXPECT_EQ(logs.Count("circuit breaker open"), 1);
//
// Thread safety: lines may be logged from any thread; read them after the work is done.
#ifndef SLUICE_TESTS_TESTING_LOG_CAPTURE_H_
#define SLUICE_TESTS_TESTING_LOG_CAPTURE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"

namespace sluice::testing {

class LogCapture {
 public:
  LogCapture()
      : previous_(spdlog::default_logger()),
        sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(kMaxLines)) {
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::trace);
    logger->set_pattern("%l %v");  // "warn message", "info message".
    spdlog::set_default_logger(std::move(logger));
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  ~LogCapture() { spdlog::set_default_logger(previous_); }

  // The lines logged so far (the last kMaxLines), each "<level> <message>".
  std::vector<std::string> Lines() const { return sink_->last_formatted(); }

  // How many lines contain `text`.
  int Count(std::string_view text) const {
    int n = 0;
    for (const std::string& line : Lines()) n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

  // All lines, one per line, for failure messages.
  std::string Dump() const {
    std::string out;
    for (const std::string& line : Lines()) out += line;
    return out;
  }

 private:
  static constexpr size_t kMaxLines = 10'000;
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_LOG_CAPTURE_H_
