#include "src/server/xds/xds_backoff.h"

#include <algorithm>
#include <cmath>

namespace sluice::server {

std::chrono::milliseconds XdsBackoffDelay(const XdsSettings& settings, int attempt,
                                          double random01) {
  using std::chrono::milliseconds;
  const milliseconds min =
      settings.backoff_initial.count() > 0 ? settings.backoff_initial : milliseconds(100);
  const milliseconds max =
      settings.backoff_max.count() > 0 ? settings.backoff_max : milliseconds(10'000);
  if (min >= max) return max;
  const double factor = settings.backoff_factor > 0 ? settings.backoff_factor : 2.0;
  const auto min_ms = static_cast<double>(min.count());
  double ms = min_ms * std::pow(factor, attempt);
  if (settings.backoff_jitter) ms = random01 * (ms - min_ms) + min_ms;
  // NaN and overflow land on max, as jpillora's "larger than maxInt64" check does.
  if (!(ms < static_cast<double>(max.count()))) return max;
  return std::max(min, milliseconds(static_cast<int64_t>(ms)));
}

std::chrono::milliseconds XdsBackoff::Next() {
  const double draw = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
  const std::chrono::milliseconds d = XdsBackoffDelay(settings_, attempt_, draw);
  // Bounded so that the power stays finite however long the server stays away.
  attempt_ = std::min(attempt_ + 1, 64);
  return d;
}

}  // namespace sluice::server
