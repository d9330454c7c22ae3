// clang-format off: README shows these lines as they are.
// README's library example: one limit, checked against the embedded memory store.
#include <chrono>
#include <cstdio>
#include <memory>

#include "sluice/memory_store.h"
#include "sluice/version.h"

int main() {
  // clang-format off
  // [library example]
  absl::StatusOr<std::unique_ptr<sluice::MemoryStore>> store = sluice::MemoryStore::Create({});
  if (!store.ok()) return 1;
  sluice::Limit per_user{.algorithm = sluice::Algorithm::kGcra, .limit = 100,
                         .period = std::chrono::minutes(1), .burst = 20};
  absl::StatusOr<sluice::Decision> d = (*store)->Check("user:42", per_user);
  if (d.ok() && !d->allowed) {
    // 429, Retry-After: ceil(d->retry_after)
  }
  // [library example]
  // clang-format on

  // A burst of 20 passes at once, the 21st request is denied.
  int allowed = d.ok() && d->allowed ? 1 : 0;
  for (int i = 0; i < 20; ++i) {
    d = (*store)->Check("user:42", per_user);
    if (!d.ok()) return 1;
    allowed += d->allowed ? 1 : 0;
  }
  std::printf("sluice %s: %d of 21 allowed\n", SLUICE_VERSION_STRING, allowed);
  return allowed == 20 ? 0 : 1;
}
