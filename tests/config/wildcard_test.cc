#include "src/config/wildcard.h"

#include "gtest/gtest.h"

namespace sluice::internal {
namespace {

TEST(WildcardMatch, TrailingStarIsAPrefixMatchIncludingTheEmptyRest) {
  EXPECT_TRUE(WildcardMatch("foo*", "foo"));
  EXPECT_TRUE(WildcardMatch("foo*", "foobar"));
  EXPECT_FALSE(WildcardMatch("foo*", "fo"));
  EXPECT_FALSE(WildcardMatch("foo*", "xfoo"));
}

TEST(WildcardMatch, LeadingStarIsASuffixMatch) {
  EXPECT_TRUE(WildcardMatch("*.example.com", "a.example.com"));
  EXPECT_TRUE(WildcardMatch("*.example.com", ".example.com"));
  EXPECT_FALSE(WildcardMatch("*.example.com", "example.com"));
  EXPECT_FALSE(WildcardMatch("*.example.com", "a.example.com.evil"));
}

TEST(WildcardMatch, StarsInTheMiddleAndSeveralStars) {
  EXPECT_TRUE(WildcardMatch("/api/*/v1", "/api/users/v1"));
  EXPECT_TRUE(WildcardMatch("/api/*/v1", "/api//v1"));
  EXPECT_FALSE(WildcardMatch("/api/*/v1", "/api/users/v2"));
  EXPECT_TRUE(WildcardMatch("svc*ep*rpc", "svc-a-ep-b-rpc"));
  EXPECT_TRUE(WildcardMatch("svc*ep*rpc", "svceprpc"));
  EXPECT_FALSE(WildcardMatch("svc*ep*rpc", "svc-a-rpc"));
  EXPECT_TRUE(WildcardMatch("a**b", "ab"));
}

// Verifies backtracking: the first "ab" is not where the pattern's "ab" must land.
TEST(WildcardMatch, BacktracksWhenTheFirstCandidateFails) {
  EXPECT_TRUE(WildcardMatch("*ab", "aab"));
  EXPECT_TRUE(WildcardMatch("*ab*ab", "abxabab"));
  EXPECT_FALSE(WildcardMatch("*ab*ab", "abxab_"));
}

TEST(WildcardMatch, LoneStarMatchesEverything) {
  EXPECT_TRUE(WildcardMatch("*", ""));
  EXPECT_TRUE(WildcardMatch("*", "anything"));
}

TEST(WildcardMatch, WithoutStarsItIsEquality) {
  EXPECT_TRUE(WildcardMatch("exact", "exact"));
  EXPECT_FALSE(WildcardMatch("exact", "exactly"));
  EXPECT_FALSE(WildcardMatch("", "x"));
  EXPECT_TRUE(WildcardMatch("", ""));
}

}  // namespace
}  // namespace sluice::internal
