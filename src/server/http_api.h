// HttpApi: sluiced's HTTP endpoints, on top of HttpServer.
//
//   POST /json        the proto3 JSON form of RateLimitRequest -> RateLimitResponse; 200 when OK,
//                     429 when OVER_LIMIT, 400 for a bad request, 503 (with an error body) when the
//                     store fails (envoyproxy/ratelimit answers 400 there, which hides outages).
//   GET /healthcheck  200 only when a config is loaded, the store answers a real check (a peek
//                     through the store's script path, not a PING), every listener accepts
//                     (SetListenerHealth()) and no SIGTERM was received; else 500, as the
//                     reference answers.
//   GET /metrics      Prometheus text format.
//   GET /rlconfig     the loaded rules, one per line.
//
// Thread safety: thread-safe; the referenced objects must outlive it.
#ifndef SLUICE_SERVER_HTTP_API_H_
#define SLUICE_SERVER_HTTP_API_H_

#include <atomic>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

#include "sluice/store.h"

#include "src/server/http_server.h"
#include "src/server/metrics.h"
#include "src/server/rate_limit_service.h"
#include "src/util/mutex.h"

namespace sluice::server {

class HttpApi {
 public:
  // `health_store` is probed by /healthcheck: the store itself, not its failure-policy wrapper,
  // whose fallback would always answer.
  HttpApi(RateLimitService& service, Metrics& metrics, Store& health_store)
      : service_(service), metrics_(metrics), health_store_(health_store) {}

  // Turns /healthcheck unhealthy for good (on SIGTERM, before the listeners close).
  void MarkTerminating() { terminating_.store(true); }

  // Makes /healthcheck unhealthy while `check` returns an error (sluiced: its HTTP and gRPC
  // listeners' ListenerHealth()). `check` is called on I/O threads and must be thread-safe.
  void SetListenerHealth(absl::AnyInvocable<absl::Status() const> check) {
    internal::MutexLock lock(&mu_);
    listener_health_ = std::move(check);
  }

  // Answers one request; usable as an HttpServer::Handler.
  void Handle(const HttpRequest& request, HttpServer::Respond respond);

 private:
  void HandleJson(const HttpRequest& request, HttpServer::Respond respond);
  void HandleHealth(HttpServer::Respond respond);

  RateLimitService& service_;
  Metrics& metrics_;
  Store& health_store_;
  std::atomic<bool> terminating_{false};
  mutable internal::Mutex mu_;
  absl::AnyInvocable<absl::Status() const> listener_health_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_HTTP_API_H_
