// ListenersState: the counters of sluiced's listeners and of its gRPC server's in-flight bound, as
// ServerListeners (server_listeners.h) reads them at each scrape, and AppendListenerFamilies(),
// their families on /metrics.
//
// Thread safety: plain values; the function is pure.
#ifndef SLUICE_SERVER_LISTENER_GAUGES_H_
#define SLUICE_SERVER_LISTENER_GAUGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::server {

// One listener's counters (::sluice::net::ListenerStats), named as sluiced names the listener.
struct ListenerState {
  std::string name{};  // "grpc", "http", "debug", "prometheus"
  uint64_t accepted = 0;
  uint64_t rejected_over_cap = 0;
  uint64_t closed_idle_at_cap = 0;
  uint64_t rejected_per_address = 0;
  uint64_t accept_failures = 0;
};

// The serving side's counters: its listeners and the gRPC server's in-flight bound.
struct ListenersState {
  std::vector<ListenerState> listeners{};
  size_t grpc_in_flight = 0;
  uint64_t grpc_rejected_in_flight = 0;
  uint64_t grpc_rejected_connection_share = 0;
  uint64_t grpc_unparsable_requests = 0;
  uint64_t grpc_silent_connections_closed = 0;
};

// AppendListenerFamilies()
//
// Appends the sluice_listener_* families (one series per listener, labelled `listener`) and the
// sluice_grpc_* ones of `state` to `out` (Prometheus text format).
void AppendListenerFamilies(const ListenersState& state, std::string& out);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_LISTENER_GAUGES_H_
