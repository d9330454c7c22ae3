// XdsClient: sluiced's config from an xDS management server, State of the World over the
// aggregated discovery stream, as envoyproxy/ratelimit's GRPC_XDS_SOTW provider gets it (with
// go-control-plane's ADS client semantics).
//
// One thread owns the stream. Its first request carries the node and the RateLimitConfig type URL
// and subscribes to every resource of the type. Each response is the whole config: it is parsed
// and validated all or nothing (xds_config_convert.h), then either handed to `apply` and ACKed
// (the next request carries its version_info and nonce), or refused: `reject` hears why, and the
// NACK carries the nonce, the version of the last config applied and error_detail with the
// message; the previous config stays in force.
//
// When the stream ends (the server went away, or refused us), the last config keeps serving and
// the client subscribes again after the reference's back-off (xds_backoff.h, XDS_CLIENT_BACKOFF_*).
// While the server cannot be reached, gRPC tries to connect every connect_retry_interval. Every
// wait is cut short by Stop(): a blocked read is cancelled, a connect waits in 100 ms slices.
//
// Errors are logged at most once per distinct message every 30 s (a server that resends a bad
// config, or stays down, does not flood the log); counts are in Stats(), which the client renders
// itself at each scrape of /metrics as a GaugeSource (src/server/observe/gauge_source.h).
//
// Example:
//   auto client = XdsClient::Create(settings, {.apply = ..., .reject = ...});
//   if (!client.ok()) return client.status();
//   (*client)->Start();
//   ...
//   (*client)->Stop();  // returns within about 100 ms
//
// Thread safety: Start(), Stop(), Stats() and AppendPrometheus() are thread-safe; the callbacks
// run on the client's
// thread, one at a time, never after Stop() has returned.
#ifndef SLUICE_SERVER_XDS_XDS_CLIENT_H_
#define SLUICE_SERVER_XDS_XDS_CLIENT_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "sluice/config.h"

#include "src/server/observe/gauge_source.h"
#include "src/server/xds/xds_settings.h"
#include "src/util/mutex.h"

namespace grpc {
class ChannelCredentials;
class ClientContext;
}  // namespace grpc

namespace sluice::server {

struct XdsClientCallbacks {
  // A response that validated: the config to serve now, and where it came from
  // ("xds <server url> version <version_info>"). Must be quick (swap, count, log).
  std::function<void(const std::string& origin, std::shared_ptr<const RateLimitConfig> config)>
      apply;
  // A response refused (and NACKed), and why. Optional.
  std::function<void(const absl::Status& why)> reject;
};

// What the client did since it started.
struct XdsClientStats {
  uint64_t responses = 0;  // DiscoveryResponses received
  uint64_t acks = 0;       // applied and ACKed
  uint64_t nacks = 0;      // refused and NACKed
  uint64_t streams = 0;    // streams opened (the first, then each re-subscription)
  // Streams that ended, plus each connect_retry_interval spent without a connection.
  uint64_t stream_failures = 0;
  bool connected = false;  // a stream is open now
  std::string version{};   // version_info of the config applied last, or ""
};

// AppendXdsFamilies()
//
// Appends the sluice_xds_* families of `stats` to `out` (Prometheus text format).
void AppendXdsFamilies(const XdsClientStats& stats, std::string& out);

class XdsClient final : public GaugeSource {
 public:
  // XdsClient::Create()
  //
  // Returns a client not yet started, or InvalidArgument when a TLS file cannot be read or only
  // one of the client certificate and key is set.
  static absl::StatusOr<std::unique_ptr<XdsClient>> Create(const XdsSettings& settings,
                                                           XdsClientCallbacks callbacks);
  XdsClient(const XdsClient&) = delete;
  XdsClient& operator=(const XdsClient&) = delete;
  // Stop().
  ~XdsClient() override;

  // Starts the client's thread. REQUIRES: called once.
  void Start();
  // Cancels the stream and any wait, and joins the thread. Later calls return at once.
  void Stop();

  XdsClientStats Stats() const;
  // GaugeSource: AppendXdsFamilies() of Stats().
  void AppendPrometheus(std::string& out) const override { AppendXdsFamilies(Stats(), out); }

 private:
  XdsClient(XdsSettings settings, XdsClientCallbacks callbacks,
            std::shared_ptr<grpc::ChannelCredentials> credentials);
  void Run();
  // One stream, from connecting to its end. Returns whether it delivered a response.
  bool RunStream();
  bool Stopping() const;
  // Sleeps `d`, or less when Stop() is called.
  void Sleep(std::chrono::milliseconds d);
  // Logs `message` at error level unless the same message was logged in the last 30 s.
  void LogError(const std::string& message);

  const XdsSettings settings_;
  const XdsClientCallbacks callbacks_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  mutable internal::Mutex mu_;
  std::condition_variable_any wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The stream's context while one is open, for Stop() to cancel.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  XdsClientStats stats_ ABSL_GUARDED_BY(mu_);
  // Client thread only.
  std::string last_error_;
  std::chrono::steady_clock::time_point last_error_at_{};
  std::thread thread_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_XDS_XDS_CLIENT_H_
