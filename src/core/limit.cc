#include "sluice/limit.h"

#include <array>
#include <string>

#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice {
namespace {

constexpr std::array<std::string_view, kAlgorithmCount> kAlgorithmNames = {
    "fixed_window", "sliding_window", "sliding_log", "token_bucket", "gcra"};

bool UsesBurst(Algorithm algorithm) {
  return algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kGcra;
}

}  // namespace

std::string_view AlgorithmName(Algorithm algorithm) {
  return kAlgorithmNames[static_cast<size_t>(algorithm)];
}

absl::StatusOr<Algorithm> ParseAlgorithm(std::string_view name) {
  for (size_t i = 0; i < kAlgorithmNames.size(); ++i) {
    if (kAlgorithmNames[i] == name) return static_cast<Algorithm>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown algorithm '", internal::AbslView(name),
                   "' (expected fixed_window, sliding_window, sliding_log, token_bucket or gcra)"));
}

int64_t Limit::Capacity() const {
  return UsesBurst(algorithm) && burst.has_value() ? *burst : limit;
}

absl::Status ValidateLimit(const Limit& l) {
  const auto algorithm_index = static_cast<size_t>(l.algorithm);
  if (algorithm_index >= kAlgorithmNames.size()) {
    return absl::InvalidArgumentError("limit.algorithm: unknown algorithm");
  }
  if (l.limit < 1 || l.limit > kMaxLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit.limit: must be in [1, ", kMaxLimit, "], got ", l.limit));
  }
  const int64_t period_us = l.period.count();
  if (period_us < 1000 || period_us % 1000 != 0 || l.period > kMaxPeriod) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit.period: must be a whole number of milliseconds in [1ms, ",
                     kMaxPeriod.count() / 1000, "ms], got ", period_us, "us"));
  }
  if (l.burst.has_value()) {
    if (!UsesBurst(l.algorithm)) {
      return absl::InvalidArgumentError(
          absl::StrCat("limit.burst: only token_bucket and gcra take a burst, not ",
                       internal::AbslView(AlgorithmName(l.algorithm))));
    }
    if (*l.burst < 1 || *l.burst > kMaxLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat("limit.burst: must be in [1, ", kMaxLimit, "], got ", *l.burst));
    }
  }
  // Products of a period and a quota must stay below 2^50 so that the arithmetic is exact in
  // int64 and in Lua's doubles alike (docs/algorithms.md, "Exact arithmetic"). Both factors are
  // already bounded, so the division cannot lose a rejection.
  switch (l.algorithm) {
    case Algorithm::kFixedWindow:
      break;
    case Algorithm::kSlidingLog:
      if (l.limit > kMaxSlidingLogLimit) {
        return absl::InvalidArgumentError(
            absl::StrCat("limit.limit: sliding_log keeps one entry per admitted unit and allows at "
                         "most ",
                         kMaxSlidingLogLimit, ", got ", l.limit));
      }
      break;
    case Algorithm::kSlidingWindow:
      if (l.limit > kMaxRateProduct / (period_us / 1000)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "limit.limit: sliding_window needs limit x period_ms <= 2^50; ", l.limit, " x ",
            period_us / 1000, " is too large (shorten the period or use fixed_window)"));
      }
      break;
    case Algorithm::kTokenBucket:
    case Algorithm::kGcra:
      if (l.Capacity() > kMaxRateProduct / period_us || l.limit > kMaxRateProduct / period_us) {
        return absl::InvalidArgumentError(
            absl::StrCat("limit: ", internal::AbslView(AlgorithmName(l.algorithm)),
                         " needs max(limit, burst) x period_us <= 2^50; ", Describe(l),
                         " is too large (shorten the period or use fixed_window)"));
      }
      break;
  }
  return absl::OkStatus();
}

absl::Status ValidateCost(int64_t cost) {
  if (cost < 0 || cost > kMaxCost) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost: must be in [0, ", kMaxCost, "], got ", cost));
  }
  return absl::OkStatus();
}

std::string Describe(const Limit& l) {
  std::string out = absl::StrCat(internal::AbslView(AlgorithmName(l.algorithm)), " ", l.limit, "/");
  const int64_t ms = l.period.count() / 1000;
  if (ms % 1000 == 0) {
    absl::StrAppend(&out, ms / 1000, "s");
  } else {
    absl::StrAppend(&out, ms, "ms");
  }
  if (l.burst.has_value()) absl::StrAppend(&out, " burst ", *l.burst);
  return out;
}

}  // namespace sluice
