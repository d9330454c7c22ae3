#include "src/server/memory_release.h"

#include <algorithm>
#include <cstdio>

#include <malloc.h>
#include <unistd.h>

namespace sluice::server {
namespace {

// Bytes malloc has handed out and not had back: chunks in the arenas plus mmap()ed ones.
uint64_t HeapInUse(const struct mallinfo2& info) { return info.uordblks + info.hblkhd; }

uint64_t Minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

bool ShouldReleaseMemory(uint64_t slack, uint64_t free_bytes, uint64_t reference,
                         uint64_t step_bytes) {
  return step_bytes > 0 && slack >= reference + step_bytes && free_bytes >= step_bytes;
}

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0;      // NOLINT(google-runtime-int): the format's type.
  unsigned long long resident = 0;  // NOLINT(google-runtime-int)
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

MemoryRelease::MemoryRelease(uint64_t step_bytes) : step_bytes_(step_bytes) {
  lowest_rss_ = ResidentBytes();
  reference_slack_ = Minus(lowest_rss_, HeapInUse(mallinfo2()));
}

std::optional<MemoryReleaseResult> MemoryRelease::Poll() {
  if (step_bytes_ == 0) return std::nullopt;
  const uint64_t rss = ResidentBytes();
  lowest_rss_ = std::min(lowest_rss_, rss);
  // The cheap test first: below it, there cannot be `step_bytes_` of slack more than at start.
  if (rss < lowest_rss_ + step_bytes_) return std::nullopt;
  const struct mallinfo2 info = mallinfo2();
  const uint64_t slack = Minus(rss, HeapInUse(info));
  reference_slack_ = std::min(reference_slack_, slack);
  if (!ShouldReleaseMemory(slack, info.fordblks, reference_slack_, step_bytes_)) {
    return std::nullopt;
  }
  const auto start = std::chrono::steady_clock::now();
  malloc_trim(0);
  MemoryReleaseResult result{.rss_before = rss,
                             .rss_after = ResidentBytes(),
                             .free_bytes = info.fordblks,
                             .took = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - start)};
  // What a trim could not give back (pages partly in use) is not asked for again.
  reference_slack_ = Minus(result.rss_after, HeapInUse(info));
  return result;
}

}  // namespace sluice::server
