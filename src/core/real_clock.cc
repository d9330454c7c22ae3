// The real Clock: the one place in sluice that reads std::chrono's clocks.
#include <chrono>

#include "sluice/clock.h"

namespace sluice {
namespace {

class RealClock final : public Clock {
 public:
  RealClock()
      : steady_origin_(std::chrono::steady_clock::now()),
        epoch_origin_(std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now().time_since_epoch())) {}

  std::chrono::steady_clock::time_point Now() override { return std::chrono::steady_clock::now(); }

  std::chrono::microseconds EpochNow() override {
    // Wall time sampled once plus monotonic elapsed time: a wall-clock step moves nothing.
    return epoch_origin_ + std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - steady_origin_);
  }

 private:
  const std::chrono::steady_clock::time_point steady_origin_;
  const std::chrono::microseconds epoch_origin_;
};

}  // namespace

Clock& Clock::Real() {
  static auto* clock = new RealClock();  // Never destroyed: usable during static teardown.
  return *clock;
}

}  // namespace sluice
