// XdsBackoff: the delay before the xDS client subscribes again after a stream ends, computed as
// envoyproxy/ratelimit computes it (jpillora/backoff's Backoff.Duration() with Min, Max, Factor and
// Jitter taken from XDS_CLIENT_BACKOFF_*), so a deployment tuned for the reference retries at the
// same pace.
//
// Example:
//   XdsBackoff backoff(settings);
//   std::chrono::milliseconds d = backoff.Next();  // 10 s, then 10 s ... with the defaults
//
// Thread safety: not thread-safe; one per client thread.
#ifndef SLUICE_SERVER_XDS_XDS_BACKOFF_H_
#define SLUICE_SERVER_XDS_XDS_BACKOFF_H_

#include <chrono>
#include <random>
#include <utility>

#include "src/server/xds/xds_settings.h"

namespace sluice::server {

// XdsBackoffDelay()
//
// Returns the delay of retry number `attempt` (0 for the first): min * factor^attempt, drawn
// uniformly between min and that when `jitter` (`random01` in [0, 1) is the draw), then clamped
// to [min, max]. As jpillora/backoff: a min of 0 is 100 ms, a max of 0 is 10 s, a factor of 0 or
// less is 2, and min >= max gives max.
std::chrono::milliseconds XdsBackoffDelay(const XdsSettings& settings, int attempt,
                                          double random01);

class XdsBackoff {
 public:
  explicit XdsBackoff(XdsSettings settings) : settings_(std::move(settings)) {}

  // Returns the next delay and counts the attempt.
  std::chrono::milliseconds Next();
  // Starts again from the first delay (after a stream that delivered a response).
  void Reset() { attempt_ = 0; }

 private:
  const XdsSettings settings_;
  int attempt_ = 0;
  std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_XDS_XDS_BACKOFF_H_
