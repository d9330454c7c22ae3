#include "src/server/descriptor_key.h"

#include <chrono>

#include "gtest/gtest.h"

namespace sluice::server {
namespace {

TEST(StoreKey, JoinsDomainEntriesAlgorithmAndPeriod) {
  const DescriptorEntry entries[] = {{"remote_address", "10.0.0.1"}, {"path", "/a"}};
  EXPECT_EQ(StoreKey("edge", entries, Limit{.limit = 3, .period = std::chrono::minutes(1)}),
            "edge|remote_address=10.0.0.1|path=/a|fixed_window/60000");
}

// Verifies the separators are escaped, so a value holding one cannot pose as two entries.
TEST(StoreKey, EscapedSeparatorsNeverCollide) {
  const DescriptorEntry one[] = {{"a", "b|c=d"}};
  const DescriptorEntry two[] = {{"a", "b"}, {"c", "d"}};
  const Limit limit{.limit = 1};
  EXPECT_NE(StoreKey("x", one, limit), StoreKey("x", two, limit));
  EXPECT_EQ(StoreKey("x", one, limit), "x|a=b\\|c\\=d|fixed_window/1000");
}

TEST(StoreKey, QuotaIsNotPartOfTheKeyButPeriodIs) {
  const DescriptorEntry entries[] = {{"k", "v"}};
  EXPECT_EQ(StoreKey("d", entries, Limit{.limit = 1}), StoreKey("d", entries, Limit{.limit = 9}));
  EXPECT_NE(StoreKey("d", entries, Limit{.limit = 1}),
            StoreKey("d", entries, Limit{.limit = 1, .period = std::chrono::seconds(2)}));
}

}  // namespace
}  // namespace sluice::server
