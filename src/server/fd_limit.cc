#include "src/server/fd_limit.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include <sys/resource.h>

namespace sluice::server {
namespace {

constexpr uint64_t kNrOpenFallback = 1 << 20;

uint64_t NrOpen() {
  std::ifstream in("/proc/sys/fs/nr_open");
  uint64_t n = 0;
  if (in >> n && n > 0) return n;
  return kNrOpenFallback;
}

uint64_t Value(rlim_t r) { return r == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(r); }

}  // namespace

absl::StatusOr<FdLimit> RaiseFdLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(absl::StrCat("getrlimit(RLIMIT_NOFILE): ", std::strerror(errno)));
  }
  FdLimit result{.soft_before = Value(limit.rlim_cur),
                 .soft = Value(limit.rlim_cur),
                 .hard = Value(limit.rlim_max)};
  const rlim_t target =
      limit.rlim_max == RLIM_INFINITY ? static_cast<rlim_t>(NrOpen()) : limit.rlim_max;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= target) return result;
  limit.rlim_cur = target;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(
        absl::StrCat("setrlimit(RLIMIT_NOFILE, ", target, "): ", std::strerror(errno)));
  }
  result.soft = Value(target);
  return result;
}

size_t FdBudget(uint64_t soft_limit) {
  return static_cast<size_t>(std::clamp<uint64_t>(soft_limit / 4, 1, 10'000));
}

}  // namespace sluice::server
