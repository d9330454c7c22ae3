// RaiseFdLimit(): lifts the soft RLIMIT_NOFILE to the hard limit at start.
//
// Every connection sluiced holds (HTTP, gRPC, Redis) is a file descriptor. Many distributions
// start services with a soft limit of 1,024 and a hard limit far above it (systemd: 524,288), so
// a few hundred idle clients exhaust the soft limit while the process may raise it itself. The
// connection caps of the listeners are then derived from the raised limit (FdBudget()).
//
// Example:
//   absl::StatusOr<FdLimit> fds = RaiseFdLimit();
//   if (fds.ok()) spdlog::info("file descriptors: {} (was {})", fds->soft, fds->soft_before);
//
// Thread safety: call once at start, before threads open descriptors.
#ifndef SLUICE_SERVER_FD_LIMIT_H_
#define SLUICE_SERVER_FD_LIMIT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace sluice::server {

struct FdLimit {
  // The soft limit before the call and after it, and the hard limit. RLIM_INFINITY reads as
  // UINT64_MAX.
  uint64_t soft_before = 0;
  uint64_t soft = 0;
  uint64_t hard = 0;
};

// RaiseFdLimit()
//
// Sets the soft RLIMIT_NOFILE to the hard limit; an infinite hard limit is capped at
// /proc/sys/fs/nr_open (the kernel refuses more), or 1,048,576 when that cannot be read. Returns
// the limits; Internal when getrlimit() or setrlimit() fails (the soft limit is then unchanged).
absl::StatusOr<FdLimit> RaiseFdLimit();

// FdBudget()
//
// The connection cap a listener gets by default when the process may hold `soft_limit`
// descriptors: a quarter of them (two listeners, plus room for store connections, files and
// gRPC's own descriptors), at most 10,000, at least 1.
size_t FdBudget(uint64_t soft_limit);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_FD_LIMIT_H_
