// MockStore: a GoogleMock Store. Use it as StrictMock<MockStore>, so that any call a test did not
// expect (for example a store call after failed validation) fails the test.
//
// Example:
//   StrictMock<MockStore> store;
//   EXPECT_CALL(store, Check("user:42", _, 1)).WillOnce(Return(Decision{.allowed = true}));
//
// Thread safety: as GoogleMock mocks are; expectations must be set before concurrent calls.
#ifndef SLUICE_TESTS_MOCKS_MOCK_STORE_H_
#define SLUICE_TESTS_MOCKS_MOCK_STORE_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/store.h"

namespace sluice::testing {

// Mocks the one primitive of a store: every call of Check(), CheckAsync(), CheckAll() and
// CheckAllAsync() with valid input reaches Decide().
class MockStore : public Store {
 public:
  MOCK_METHOD(void, Decide, (std::span<const LimitCheck> checks, MultiDecisionCallback done),
              (override));
  MOCK_METHOD(std::string_view, Name, (), (const, override));
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_MOCKS_MOCK_STORE_H_
