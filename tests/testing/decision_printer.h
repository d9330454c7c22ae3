// PrintTo(Decision): makes GoogleTest print a Decision as its fields rather than as bytes.
//
// Example:
//   #include "tests/testing/decision_printer.h"
//   EXPECT_EQ(store.Check("k", limit, 1).value(), expected);  // A failure shows both decisions.
//
// Thread safety: a pure function.
#ifndef SLUICE_TESTS_TESTING_DECISION_PRINTER_H_
#define SLUICE_TESTS_TESTING_DECISION_PRINTER_H_

#include <ostream>

#include "sluice/decision.h"

namespace sluice {

// Found by argument-dependent lookup, so it lives in Decision's namespace.
inline void PrintTo(const Decision& d, std::ostream* os) {
  *os << "{allowed=" << d.allowed << " limit=" << d.limit << " remaining=" << d.remaining
      << " reset_after=" << d.reset_after.count() << "us retry_after=" << d.retry_after.count()
      << "us" << (d.from_fallback ? " fallback" : "") << "}";
}

}  // namespace sluice

#endif  // SLUICE_TESTS_TESTING_DECISION_PRINTER_H_
