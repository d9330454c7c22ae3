// Health: whether sluiced should receive traffic, the one answer behind both /healthcheck and
// grpc.health.v1.Health.
//
// Healthy means: no SIGTERM received, a config loaded (with `require_domain`, one naming at least
// one domain, the reference's HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED), every listener accepting
// (SetListenerHealth()), and every store answering a real check (a cost-0 peek through the same
// script path as a decision, not a PING). Each Check() result, and MarkTerminating(), is compared
// with the last known state; a change is passed to the OnChange() listener, which sluiced points at
// GrpcServer::SetServing(), so gRPC health follows whatever /healthcheck last saw, and a periodic
// Check() keeps it current without HTTP traffic.
//
// Example:
//   Health health(service, {store}, HealthOptions{});
//   health.OnChange([&grpc](bool healthy) { grpc.SetServing(healthy); });
//   health.Check([](HealthResult r) { ... });
//
// Thread safety: thread-safe. Check() completes inline when the stores answer inline, else on a
// store thread; the listener runs on the thread that saw the change, never twice at once. A
// completion that arrives after the Health is gone touches only state it shares.
#ifndef SLUICE_SERVER_ADMIN_HEALTH_H_
#define SLUICE_SERVER_ADMIN_HEALTH_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

#include "sluice/store.h"

#include "src/server/rls/rate_limit_service.h"

namespace sluice::server {

struct HealthOptions {
  // Unhealthy while the loaded config names no domain. Default: off (any loaded config will do).
  bool require_domain = false;
};

struct HealthResult {
  bool healthy = false;
  // Why not: "terminating", "no_config", "no_domain", "listener_dead" or "store_unavailable";
  // empty when healthy.
  std::string reason{};
  std::string message{};
};

class Health {
 public:
  using Listener = std::function<void(bool healthy)>;
  using Callback = absl::AnyInvocable<void(HealthResult) &&>;
  // OK while every listener accepts; called on the checking thread, so it must be thread-safe.
  using ListenerCheck = std::function<absl::Status()>;

  // `service` and every store must outlive the Health's Check() calls. `stores` are checked in
  // order; the first that fails decides the message.
  Health(const RateLimitService& service, std::vector<Store*> stores, HealthOptions options = {});
  Health(const Health&) = delete;
  Health& operator=(const Health&) = delete;
  ~Health() = default;

  // Unhealthy for good (SIGTERM); tells the listener at once.
  void MarkTerminating();

  // Health::Check()
  //
  // Runs the checks and completes `done` exactly once with the result.
  void Check(Callback done);

  // Sets the listener of changes (nullptr: none). It is first told on the next change.
  void OnChange(Listener listener);

  // Makes Check() unhealthy ("listener_dead") while `check` returns an error (sluiced: its HTTP
  // and gRPC listeners' ListenerHealth()). nullptr: no listener check.
  void SetListenerHealth(ListenerCheck check);

 private:
  struct State;
  const RateLimitService& service_;
  const std::vector<Store*> stores_;
  const HealthOptions options_;
  std::shared_ptr<State> state_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_ADMIN_HEALTH_H_
