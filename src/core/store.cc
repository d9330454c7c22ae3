#include "sluice/store.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

#include "sluice/status_macros.h"

namespace sluice {
namespace {

// The one decision of a call with one check.
absl::StatusOr<Decision> OnlyDecision(absl::StatusOr<MultiDecision> result) {
  if (!result.ok()) return std::move(result).status();
  if (result->decisions.size() != 1) {
    return absl::InternalError(
        absl::StrCat("store answered ", result->decisions.size(), " decisions for 1 check"));
  }
  return std::move(result->decisions[0]);
}

}  // namespace

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
    if (!checks[i].count_rejected) continue;
    if (checks[i].refund) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checks[", i, "].refund: a credit gives units back; it does not count rejected hits"));
    }
    // Counting rejected hits is the reference's fixed window, decided on its own: in an
    // all-or-nothing call a check that records even when denied has no meaning.
    if (checks[i].limit.algorithm != Algorithm::kFixedWindow) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checks[", i, "].count_rejected: only a fixed_window limit counts rejected hits"));
    }
    if (checks.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checks[", i, "].count_rejected: a check counting rejected hits must be the only check"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<MultiDecision> Store::DecideAndWait(std::span<const LimitCheck> checks) {
  if (AnswersInline()) {
    // Answered before Decide() returns: no synchronization needed.
    std::optional<absl::StatusOr<MultiDecision>> result;
    Decide(checks, [&result](absl::StatusOr<MultiDecision> r) { result.emplace(std::move(r)); });
    if (result.has_value()) return *std::move(result);
    return absl::InternalError(absl::StrCat(
        "store ", absl::string_view(Name().data(), Name().size()), " did not answer inline"));
  }
  // Not a promise: its shared state is an allocation and a once-flag, and getting its value
  // enters the kernel even when the answer came inline (a lease spent in memory). The answer is
  // handed over under a mutex, notified while held, so that the waiter returns (and destroys all
  // three) only after the answering thread is done with them.
  struct Handover {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<absl::StatusOr<MultiDecision>> result;
  } handover;
  Decide(checks, [&handover](absl::StatusOr<MultiDecision> r) {
    std::lock_guard<std::mutex> lock(handover.mu);
    handover.result.emplace(std::move(r));
    handover.cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(handover.mu);
  handover.cv.wait(lock, [&handover] { return handover.result.has_value(); });
  return *std::move(handover.result);
}

absl::StatusOr<MultiDecision> Store::CheckAll(std::span<const LimitCheck> checks) {
  SLUICE_RETURN_IF_ERROR(ValidateChecks(checks));
  return DecideAndWait(checks);
}

void Store::CheckAllAsync(std::span<const LimitCheck> checks, MultiDecisionCallback done) {
  if (absl::Status s = ValidateChecks(checks); !s.ok()) {
    std::move(done)(std::move(s));
    return;
  }
  Decide(checks, std::move(done));
}

absl::StatusOr<Decision> Store::Check(std::string_view key, const Limit& limit, int64_t cost) {
  SLUICE_RETURN_IF_ERROR(ValidateCheck(key, limit, cost));
  const LimitCheck check{.key = std::string(key), .limit = limit, .cost = cost};
  return OnlyDecision(DecideAndWait({&check, 1}));
}

absl::StatusOr<Decision> Store::Refund(std::string_view key, const Limit& limit, int64_t units) {
  SLUICE_RETURN_IF_ERROR(ValidateCheck(key, limit, units));
  const LimitCheck check{.key = std::string(key), .limit = limit, .cost = units, .refund = true};
  return OnlyDecision(DecideAndWait({&check, 1}));
}

void Store::CheckAsync(std::string_view key, const Limit& limit, int64_t cost,
                       DecisionCallback done) {
  if (absl::Status s = ValidateCheck(key, limit, cost); !s.ok()) {
    std::move(done)(std::move(s));
    return;
  }
  const LimitCheck check{.key = std::string(key), .limit = limit, .cost = cost};
  Decide({&check, 1}, [done = std::move(done)](absl::StatusOr<MultiDecision> r) mutable {
    std::move(done)(OnlyDecision(std::move(r)));
  });
}

}  // namespace sluice
