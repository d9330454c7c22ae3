// MemoryRelease: gives freed heap memory back to the operating system after a burst.
//
// glibc's malloc keeps what a burst frees (a gRPC flood's buffers, a reload's old config) in its
// arenas: the memory is free for the process, but stays resident, so RSS stays at the burst's
// peak. Only the top of the main heap is returned on its own (M_TRIM_THRESHOLD); memory in the
// middle of a heap and in the arenas of other threads is not. malloc_trim(0) walks every arena
// and returns the free pages (madvise), which brings RSS back near its baseline.
//
// Poll() decides on the slack: RSS minus what malloc has handed out (mallinfo2(): chunks in use
// and mmap()ed ones), which is the process's fixed part (code, stacks) plus heap memory freed but
// still resident. It trims when the slack has grown by `step_bytes` over its lowest value since
// the last trim and malloc holds at least `step_bytes` free; memory in use (a store that grew) is
// never a reason. After a trim the reference is the slack left (pages a trim cannot give back
// are not asked for again). Poll() is cheap when nothing happened: it reads RSS
// (/proc/self/statm) and returns while RSS is less than `step_bytes` above its lowest; only then
// does it call mallinfo2(), which walks the free lists. sluiced polls it from its main loop, once
// per config poll (1 s by default), off the threads that answer decisions; a trim holds each
// arena's lock while it walks it.
//
// Example:
//   MemoryRelease release(8 << 20);
//   if (auto r = release.Poll(); r.has_value()) log(r->rss_before, r->rss_after);
//
// Thread safety: Poll() from one thread at a time.
#ifndef SLUICE_SERVER_MEMORY_RELEASE_H_
#define SLUICE_SERVER_MEMORY_RELEASE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace sluice::server {

struct MemoryReleaseResult {
  uint64_t rss_before = 0;
  uint64_t rss_after = 0;
  // What malloc held free (not in use) when the trim was decided.
  uint64_t free_bytes = 0;
  std::chrono::microseconds took{0};
};

// ShouldReleaseMemory()
//
// The rule Poll() applies: `slack` at least `step_bytes` above `reference` and at least
// `step_bytes` free in the heap. Never with a step of 0.
bool ShouldReleaseMemory(uint64_t slack, uint64_t free_bytes, uint64_t reference,
                         uint64_t step_bytes);

// ResidentBytes()
//
// This process's resident set size in bytes (/proc/self/statm), or 0 when it cannot be read.
uint64_t ResidentBytes();

class MemoryRelease {
 public:
  // `step_bytes` 0 turns it off.
  explicit MemoryRelease(uint64_t step_bytes);

  // Trims when ShouldReleaseMemory() says so; the result then, else nullopt.
  std::optional<MemoryReleaseResult> Poll();

 private:
  uint64_t step_bytes_;
  uint64_t lowest_rss_ = 0;
  uint64_t reference_slack_ = 0;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_MEMORY_RELEASE_H_
