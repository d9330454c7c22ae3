// ConfigProvider: where the config sluiced serves comes from, and every load of it, as the
// reference's config providers (CONFIG_TYPE FILE or GRPC_XDS_SOTW). Either the files at
// settings.config, loaded at start, then again when they change (Poll()) and on SIGHUP
// (Reload()), each reload on a thread of its own so that the signal thread never waits for a
// parse (config_reloader.h); or, with CONFIG_TYPE=GRPC_XDS_SOTW, an xDS management server, whose
// client's thread applies what it sends (src/server/xds/xds_client.h).
//
// A config that loads is served (RateLimitService::SetConfig()); one refused leaves the previous
// one serving. Either way the process's observers hear of it (ProcessObserver::OnConfigLoad()),
// and it is logged (the xDS client logs its refusals itself, throttled).
//
// Example:
//   SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ConfigProvider> config,
//                           ConfigProvider::Create(settings, service, observers));
//   if (config->Start(signals) != ConfigProvider::Started::kServing) return ...;
//   ...
//   config->Poll();  // once a poll interval
//
// Thread safety: Start(), Reload(), Poll() and Stop() from one thread (the main thread); loads are
// applied on the reloader's or the xDS client's thread, one at a time.
#ifndef SLUICE_SERVER_CONFIG_PROVIDER_H_
#define SLUICE_SERVER_CONFIG_PROVIDER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

#include "sluice/config.h"

#include "src/server/config_reloader.h"
#include "src/server/config_watcher.h"
#include "src/server/observe/gauge_source.h"
#include "src/server/observe/process_observer.h"
#include "src/server/rls/rate_limit_service.h"
#include "src/server/settings.h"
#include "src/server/signal_waiter.h"
#include "src/server/xds/xds_client.h"

namespace sluice::server {

class ConfigProvider {
 public:
  // ConfigProvider::Create()
  //
  // Returns the source `settings` name, not yet started, or InvalidArgument when the xDS client's
  // TLS files cannot be used. `settings`, `service` and `observer` must outlive the source.
  static absl::StatusOr<std::unique_ptr<ConfigProvider>> Create(const ServerSettings& settings,
                                                                RateLimitService& service,
                                                                ProcessObserver& observer);
  ConfigProvider(const ConfigProvider&) = delete;
  ConfigProvider& operator=(const ConfigProvider&) = delete;
  // Stop(); a file reload in progress is given ConfigReloaderOptions::stop_bound.
  ~ConfigProvider();

  enum class Started {
    kServing,      // a config is served, or none yet with settings.force_start
    kRefused,      // the files were refused at start, without force_start
    kInterrupted,  // SIGINT or SIGTERM came while waiting for xDS's first config
  };
  // ConfigProvider::Start()
  //
  // Serves the first config. Files: loads them now. xDS: starts the client and, without
  // settings.force_start, waits for its first config (as the reference: no listener before it;
  // unlike it, a refused first config does not end the wait), taking `signals` meanwhile.
  Started Start(SignalWaiter& signals);
  // On SIGHUP: the files are read again (nothing for xDS, which sends what changes).
  void Reload();
  // Once a poll interval: the files are read again when they changed.
  void Poll();
  // xDS: ends the stream; nothing is applied after it returns.
  void Stop();

  // The xDS client's families (sluice_xds_*), or null for files.
  const GaugeSource* gauges() const { return xds_.get(); }

 private:
  ConfigProvider(const ServerSettings& settings, RateLimitService& service,
                 ProcessObserver& observer);
  // Serves `config`, from `origin`, loaded `why` ("at start", "on SIGHUP", "from xds").
  void Serve(const std::string& why, const std::string& origin,
             std::shared_ptr<const RateLimitConfig> config);
  // Serves the files' config, or reports and logs their refusal. Returns whether it was served.
  bool Apply(const std::string& why, ConfigReloader::Result config);
  // Reports an xDS config refused (the client logs why).
  void Reject(const absl::Status& why);

  const ServerSettings& settings_;
  RateLimitService& service_;
  ProcessObserver& observer_;
  // Files: how they load, the reloader and the files' fingerprint.
  ConfigReloader::Load load_files_;
  std::optional<ConfigReloader> reloader_;
  std::optional<ConfigWatcher> watcher_;
  // xDS: the client.
  std::unique_ptr<XdsClient> xds_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_CONFIG_PROVIDER_H_
