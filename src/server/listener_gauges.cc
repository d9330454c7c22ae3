#include "src/server/listener_gauges.h"

#include <string_view>

#include "absl/strings/str_cat.h"

#include "src/server/observe/prometheus_text.h"
#include "src/util/strings.h"

namespace sluice::server {

void AppendListenerFamilies(const ListenersState& state, std::string& out) {
  const auto per_listener = [&](std::string_view name, std::string_view help,
                                uint64_t ListenerState::*field) {
    AppendFamilyHeader(out, name, "counter", help);
    for (const ListenerState& l : state.listeners) {
      absl::StrAppend(&out, internal::AbslView(name), "{listener=\"", EscapeLabelValue(l.name),
                      "\"} ", l.*field, "\n");
    }
  };
  per_listener("sluice_listener_accepted_total", "Connections accepted by sluiced's listeners.",
               &ListenerState::accepted);
  per_listener("sluice_listener_rejected_over_cap_total",
               "Connections closed at once because the listener's cap was reached.",
               &ListenerState::rejected_over_cap);
  per_listener("sluice_listener_closed_idle_at_cap_total",
               "Idle connections closed at the listener's cap to make room for a new one.",
               &ListenerState::closed_idle_at_cap);
  per_listener("sluice_listener_rejected_per_address_total",
               "Connections closed at once because their address had its cap open.",
               &ListenerState::rejected_per_address);
  per_listener("sluice_listener_accept_failures_total",
               "Accepts that failed for lack of descriptors or memory (each followed by a wait).",
               &ListenerState::accept_failures);
  AppendGauge(out, "sluice_grpc_in_flight",
              "gRPC calls in flight: waiting for their connection's turn, deciding, or waiting for "
              "the store.",
              state.grpc_in_flight);
  AppendCounter(out, "sluice_grpc_rejected_in_flight_total",
                "gRPC calls answered RESOURCE_EXHAUSTED because --grpc-max-in-flight were waiting.",
                state.grpc_rejected_in_flight);
  AppendCounter(out, "sluice_grpc_rejected_connection_share_total",
                "gRPC calls answered RESOURCE_EXHAUSTED because their connection held its share of "
                "--grpc-max-in-flight.",
                state.grpc_rejected_connection_share);
  AppendCounter(out, "sluice_grpc_unparsable_requests_total",
                "gRPC calls whose bytes were not a RateLimitRequest (INVALID_ARGUMENT).",
                state.grpc_unparsable_requests);
  AppendCounter(out, "sluice_grpc_silent_connections_closed_total",
                "gRPC connections closed for sending nothing within the first-bytes timeout.",
                state.grpc_silent_connections_closed);
}

}  // namespace sluice::server
