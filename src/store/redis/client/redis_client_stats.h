// RedisClientStats: the counters of a Redis client's connections, summed.
//
// A header of its own, below both the connection (which adds its counters) and the client and
// routers (which sum them), so that the connection does not include the client.
//
// Example:
//   RedisClientStats stats = client->Stats();
//   double coalescing = double(stats.commands_sent) / double(stats.writes);
//
// Thread safety: a plain value.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_CLIENT_STATS_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_CLIENT_STATS_H_

#include <cstddef>
#include <cstdint>

namespace sluice {

// Counters of a client, summed over its connections. Read without stopping the client, so values
// may be slightly outdated relative to each other.
struct RedisClientStats {
  uint64_t commands_sent = 0;     // Commands written to a socket (handshake commands included).
  uint64_t writes = 0;            // Socket writes; commands_sent / writes is the coalescing.
  uint64_t replies = 0;           // Replies read, including late ones.
  uint64_t timeouts = 0;          // Commands failed with DeadlineExceeded.
  uint64_t late_replies = 0;      // Replies discarded because their command had timed out.
  uint64_t rejected = 0;          // Commands failed fast without being sent.
  uint64_t lost = 0;              // Commands failed because their connection was lost.
  uint64_t connects = 0;          // Successful connects (first and re-connects).
  uint64_t connect_failures = 0;  // Failed connection attempts.
  uint64_t disconnects = 0;       // Established connections lost.
  int connections = 0;            // Configured connections.
  int connections_ready = 0;      // Connections currently ready for commands.
  size_t in_flight = 0;           // Commands written and awaiting replies (or discarding).
  size_t queued = 0;              // Commands waiting to be written.
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_CLIENT_STATS_H_
