#include "src/server/config_provider.h"

#include <csignal>
#include <utility>

#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

#include "src/util/strings.h"

namespace sluice::server {

using ::sluice::internal::StdView;

ConfigProvider::ConfigProvider(const ServerSettings& settings, RateLimitService& service,
                               ProcessObserver& observer)
    : settings_(settings), service_(service), observer_(observer) {}

ConfigProvider::~ConfigProvider() { Stop(); }

absl::StatusOr<std::unique_ptr<ConfigProvider>> ConfigProvider::Create(
    const ServerSettings& settings, RateLimitService& service, ProcessObserver& observer) {
  std::unique_ptr<ConfigProvider> source(new ConfigProvider(settings, service, observer));
  ConfigProvider* s = source.get();
  if (settings.xds) {
    absl::StatusOr<std::unique_ptr<XdsClient>> client = XdsClient::Create(
        settings.xds_settings,
        XdsClientCallbacks{
            .apply =
                [s](const std::string& origin, std::shared_ptr<const RateLimitConfig> config) {
                  s->Serve("from xds", origin, std::move(config));
                },
            .reject = [s](const absl::Status& why) { s->Reject(why); }});
    if (!client.ok()) return client.status();
    source->xds_ = *std::move(client);
    return source;
  }
  // The load owns what it reads (it may outlive the source when abandoned: config_reloader.h).
  const ConfigLoadOptions load_options{.merge_domains = settings.merge_domains,
                                       .ignore_dotfiles = settings.ignore_dotfiles};
  source->load_files_ = [path = settings.config, load_options] {
    return LoadRateLimitConfig(path, load_options);
  };
  source->reloader_.emplace(source->load_files_,
                            [s](const std::string& why, ConfigReloader::Result config) {
                              s->Apply(why, std::move(config));
                            });
  // Fingerprint the files before reading them: a change that lands between the two is then seen
  // by the first poll instead of being mistaken for the state already loaded.
  source->watcher_.emplace(settings.config);
  return source;
}

ConfigProvider::Started ConfigProvider::Start(SignalWaiter& signals) {
  if (xds_ == nullptr) {
    if (Apply("at start", load_files_())) return Started::kServing;
    if (!settings_.force_start) return Started::kRefused;
    spdlog::warn("starting without a config (force start); unhealthy until one loads");
    return Started::kServing;
  }
  xds_->Start();
  if (settings_.force_start) {
    spdlog::warn("starting without a config (force start); unhealthy until xds sends one");
    return Started::kServing;
  }
  spdlog::info("waiting for the first config from xds {}", settings_.xds_settings.server_url);
  while (service_.config() == nullptr) {
    if (const int sig = signals.Wait(std::chrono::milliseconds(100));
        sig == SIGINT || sig == SIGTERM) {
      spdlog::info("stopped before a config arrived");
      return Started::kInterrupted;
    }
  }
  return Started::kServing;
}

void ConfigProvider::Reload() {
  if (!watcher_.has_value()) return;
  watcher_->Poll();  // Before loading, for the same reason as at start.
  reloader_->Request("on SIGHUP");
}

void ConfigProvider::Poll() {
  if (watcher_.has_value() && watcher_->Poll()) reloader_->Request("on change");
}

void ConfigProvider::Stop() {
  if (xds_ != nullptr) xds_->Stop();
}

void ConfigProvider::Serve(const std::string& why, const std::string& origin,
                           std::shared_ptr<const RateLimitConfig> config) {
  observer_.OnConfigLoad(ConfigLoadReport{.ok = true, .origin = origin});
  service_.SetConfig(std::move(config), origin);
  spdlog::info("config {}: loaded {} (domains: {})", why, origin,
               absl::StrJoin(service_.config()->Domains(), ", "));
}

bool ConfigProvider::Apply(const std::string& why, ConfigReloader::Result config) {
  if (!config.ok()) {
    observer_.OnConfigLoad(
        ConfigLoadReport{.ok = false, .error = StdView(config.status().message())});
    spdlog::error("config {} rejected, keeping the previous one: {}", why,
                  StdView(config.status().message()));
    return false;
  }
  Serve(why, settings_.config, *std::move(config));
  return true;
}

void ConfigProvider::Reject(const absl::Status& why) {
  observer_.OnConfigLoad(ConfigLoadReport{.ok = false, .error = StdView(why.message())});
}

}  // namespace sluice::server
