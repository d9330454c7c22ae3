// MemoryRelease's rule (src/server/memory_release.h): when freed heap memory is given back. The
// release itself, in a real sluiced after a gRPC flood, is sluiced_memory_release_test.
#include "src/server/memory_release.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::server {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(ShouldReleaseMemory, NeedsTheSlackToGrowByAStepAndAStepFree) {
  // The boundary pair on the slack's growth.
  EXPECT_FALSE(ShouldReleaseMemory(10 * kMiB + 8 * kMiB - 1, 8 * kMiB, 10 * kMiB, 8 * kMiB));
  EXPECT_TRUE(ShouldReleaseMemory(10 * kMiB + 8 * kMiB, 8 * kMiB, 10 * kMiB, 8 * kMiB));
  // The boundary pair on what malloc holds free: resident memory in use is no reason.
  EXPECT_FALSE(ShouldReleaseMemory(40 * kMiB, 8 * kMiB - 1, 10 * kMiB, 8 * kMiB));
  EXPECT_TRUE(ShouldReleaseMemory(40 * kMiB, 8 * kMiB, 10 * kMiB, 8 * kMiB));
  // A step of 0 turns it off.
  EXPECT_FALSE(ShouldReleaseMemory(40 * kMiB, 40 * kMiB, 0, 0));
}

TEST(ResidentBytes, ReadsThisProcesssRss) {
  const uint64_t rss = ResidentBytes();
  EXPECT_GT(rss, 0u);
  EXPECT_LT(rss, uint64_t{64} << 30);
}

// Verifies that memory freed after it was touched is given back at the next poll, once, and
// that a poll with nothing to give back does nothing.
TEST(MemoryRelease, GivesBackFreedMemoryOnceThenNothing) {
  MemoryRelease release(8 * kMiB);
  EXPECT_FALSE(release.Poll().has_value());
  // 64 MiB in chunks below the mmap threshold (so they come from the heap), touched, then freed
  // but for the last one, which keeps the heap's top in use: only a trim returns the rest.
  std::vector<char*> chunks;
  for (int i = 0; i < 2048; ++i) {
    char* p = static_cast<char*>(std::malloc(32 * 1024));
    ASSERT_NE(p, nullptr);
    for (int j = 0; j < 32 * 1024; j += 4096) p[j] = 1;
    chunks.push_back(p);
  }
  for (size_t i = 0; i + 1 < chunks.size(); ++i) std::free(chunks[i]);
  const std::optional<MemoryReleaseResult> r = release.Poll();
  ASSERT_TRUE(r.has_value());
  EXPECT_GE(r->free_bytes, 60 * kMiB);
  EXPECT_LE(r->rss_after + 48 * kMiB, r->rss_before)
      << r->rss_before / kMiB << " MiB -> " << r->rss_after / kMiB << " MiB";
  EXPECT_FALSE(release.Poll().has_value());  // Given back already.
  std::free(chunks.back());
}

TEST(MemoryRelease, StepZeroNeverTrims) {
  MemoryRelease release(0);
  std::vector<char*> chunks;
  for (int i = 0; i < 1024; ++i) {
    char* p = static_cast<char*>(std::malloc(32 * 1024));
    ASSERT_NE(p, nullptr);
    for (int j = 0; j < 32 * 1024; j += 4096) p[j] = 1;
    chunks.push_back(p);
  }
  for (size_t i = 0; i + 1 < chunks.size(); ++i) std::free(chunks[i]);
  EXPECT_FALSE(release.Poll().has_value());
  std::free(chunks.back());
}

}  // namespace
}  // namespace sluice::server
