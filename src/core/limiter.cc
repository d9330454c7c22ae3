#include "sluice/limiter.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "sluice/status_macros.h"

namespace sluice {

absl::Status ValidateCheck(std::string_view key, const Limit& limit, int64_t cost) {
  if (key.empty()) return absl::InvalidArgumentError("key: must not be empty");
  SLUICE_RETURN_IF_ERROR(ValidateLimit(limit));
  return ValidateCost(cost);
}

absl::Status ValidateChecks(std::span<const LimitCheck> checks) {
  if (checks.empty()) return absl::InvalidArgumentError("checks: at least one check is required");
  for (size_t i = 0; i < checks.size(); ++i) {
    if (absl::Status s = ValidateCheck(checks[i].key, checks[i].limit, checks[i].cost); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("checks[", i, "].", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Decision> Limiter::Check(std::string_view key, const Limit& limit, int64_t cost) {
  SLUICE_RETURN_IF_ERROR(ValidateCheck(key, limit, cost));
  return store_.Check(key, limit, cost);
}

void Limiter::CheckAsync(std::string_view key, const Limit& limit, int64_t cost,
                         Store::DecisionCallback done) {
  if (absl::Status s = ValidateCheck(key, limit, cost); !s.ok()) {
    std::move(done)(std::move(s));
    return;
  }
  store_.CheckAsync(key, limit, cost, std::move(done));
}

absl::StatusOr<MultiDecision> Limiter::CheckAll(std::span<const LimitCheck> checks) {
  SLUICE_RETURN_IF_ERROR(ValidateChecks(checks));
  return store_.CheckAll(checks);
}

void Limiter::CheckAllAsync(std::span<const LimitCheck> checks, Store::MultiDecisionCallback done) {
  if (absl::Status s = ValidateChecks(checks); !s.ok()) {
    std::move(done)(std::move(s));
    return;
  }
  store_.CheckAllAsync(checks, std::move(done));
}

}  // namespace sluice
