// XdsSettings: how sluiced's xDS client reaches a management server (CONFIG_TYPE=GRPC_XDS_SOTW),
// with envoyproxy/ratelimit's variables and defaults (src/settings/settings.go), and the bounds it
// puts on what it is sent.
//
// Example:
//   XdsSettings xds{.server_url = "xds.example:18000", .node_id = "ratelimit"};
//
// Thread safety: a plain value.
#ifndef SLUICE_SERVER_XDS_XDS_SETTINGS_H_
#define SLUICE_SERVER_XDS_XDS_SETTINGS_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace sluice::server {

struct XdsSettings {
  // The management server, a gRPC target ("host:port"). Default: "localhost:18000"
  // (CONFIG_GRPC_XDS_SERVER_URL).
  std::string server_url = "localhost:18000";
  // Node.id of the first request of each stream; the server picks the snapshot by it. Default:
  // "default" (CONFIG_GRPC_XDS_NODE_ID).
  std::string node_id = "default";
  // Node.metadata, each a string field (CONFIG_GRPC_XDS_NODE_METADATA, "k=v,k2=v2"). Default: none.
  std::vector<std::pair<std::string, std::string>> node_metadata{};
  // gRPC metadata sent on the stream (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS, "k:v,k2:v2").
  // Default: none.
  std::vector<std::pair<std::string, std::string>> additional_headers{};
  // While the server cannot be reached, a connection is attempted this often (gRPC's reconnect
  // back-off pinned to it). Default: 3 s (CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL).
  std::chrono::milliseconds connect_retry_interval{3000};

  // TLS to the server (CONFIG_GRPC_XDS_SERVER_USE_TLS). The CA file verifies the server (empty:
  // the system's roots); the client certificate and key, when both set, are presented for mutual
  // TLS; `server_tls_san`, when set, is the name the server's certificate must carry (and the SNI)
  // instead of the host of `server_url`. Default: plaintext.
  bool use_tls = false;
  std::string client_tls_cert{};
  std::string client_tls_key{};
  std::string server_tls_ca{};
  std::string server_tls_san{};

  // After a stream ends, the delay before the next subscription, as the reference computes it
  // (jpillora/backoff; xds_backoff.h): `backoff_initial` times `backoff_factor` to the number of
  // retries so far, at most `backoff_max`, drawn between `backoff_initial` and that with
  // `backoff_jitter`. Defaults: 10 s, 60 s, 0.5, true (XDS_CLIENT_BACKOFF_INITIAL_INTERVAL,
  // _MAX_INTERVAL, _RANDOM_FACTOR, _JITTER). As in the reference, a factor below 1 keeps the delay
  // at `backoff_initial`.
  std::chrono::milliseconds backoff_initial{10'000};
  std::chrono::milliseconds backoff_max{60'000};
  double backoff_factor = 0.5;
  bool backoff_jitter = true;

  // Largest DiscoveryResponse accepted, in bytes; 0 is gRPC's default of 4 MiB, which is also the
  // reference's bound when unset (XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES). Default: 0.
  size_t max_message_bytes = 0;
  // Most RateLimitConfig resources in one response; a response with more is refused (NACK).
  // Default: 10,000.
  size_t max_resources = 10'000;
  // Most bytes of YAML the resources of one response become; past it the response is refused.
  // Default: 64 MiB (a 4 MiB response becomes well under that).
  size_t max_config_bytes = size_t{64} << 20;

  // Several resources may name one domain (MERGE_DOMAIN_CONFIG, as for files). Default: off.
  bool merge_domains = false;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_XDS_XDS_SETTINGS_H_
