// ConfigReloader: loads the config on a thread of its own, so that the thread taking signals
// never waits for a load.
//
// A 20 MB config takes seconds to parse (docs/reliability.md); done on the signal thread, a
// SIGTERM that arrives meanwhile waits for it, and so do the load balancers. Here Request()
// returns at once. Requests made while a load runs coalesce into one more load after it (the
// latest reason is the one logged): the files are read again then, so that load sees every change
// the requests were made for. Stop() bounds shutdown: a load in progress is given `bound` to
// finish; past it, it is abandoned: its thread is detached, finishes parsing on its own, and
// never applies its result.
//
// `load` runs on the reloader's thread and may outlive the reloader when abandoned, so it must own
// everything it touches (copies, not references). `apply` runs on the same thread, one call at a
// time, never after Stop() has returned; it may refer to objects that outlive Stop(). It runs
// under the reloader's lock, so it must be quick (swap the config, log, count): Request() and
// Stop() wait for an apply in progress, never for a load.
//
// Example:
//   ConfigReloader reloader([path] { return LoadRateLimitConfig(path); },
//                           [&](const std::string& why, ConfigReloader::Result config) {
//                             if (config.ok()) service.SetConfig(*std::move(config));
//                           });
//   reloader.Request("on SIGHUP");
//
// Thread safety: Request() and Stop() are thread-safe.
#ifndef SLUICE_SERVER_CONFIG_RELOADER_H_
#define SLUICE_SERVER_CONFIG_RELOADER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

#include "sluice/config.h"

namespace sluice::server {

struct ConfigReloaderOptions {
  // How long the destructor lets a load in progress finish before abandoning it. Default: 1 s.
  std::chrono::milliseconds stop_bound = std::chrono::seconds(1);
};

class ConfigReloader {
 public:
  using Result = absl::StatusOr<std::shared_ptr<const RateLimitConfig>>;
  using Load = std::function<Result()>;
  using Apply = std::function<void(const std::string& why, Result config)>;

  ConfigReloader(Load load, Apply apply, ConfigReloaderOptions options = {});
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;
  // Stop(options.stop_bound).
  ~ConfigReloader();

  // ConfigReloader::Request()
  //
  // Asks for a load and returns without waiting; ignored after Stop().
  void Request(std::string why);

  // ConfigReloader::Stop()
  //
  // Starts no further load and waits at most `bound` for the one in progress. Returns true when
  // the thread finished (joined), false when a load was still running and was abandoned. Later
  // calls return true at once.
  bool Stop(std::chrono::milliseconds bound);

 private:
  struct State;
  static void Run(const std::shared_ptr<State>& state);

  const ConfigReloaderOptions options_;
  std::shared_ptr<State> state_;  // Shared with the thread, which may outlive us when abandoned.
  std::thread thread_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_CONFIG_RELOADER_H_
