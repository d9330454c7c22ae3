// Status propagation macros, after Abseil's (which Debian's 20220623 release lacks).
//
// Example:
//   SLUICE_RETURN_IF_ERROR(ValidateLimit(limit));
//   SLUICE_ASSIGN_OR_RETURN(Decision d, store.Check(key, limit, 1));
#ifndef SLUICE_STATUS_MACROS_H_
#define SLUICE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SLUICE_STATUS_CONCAT_INNER_(a, b) a##b
#define SLUICE_STATUS_CONCAT_(a, b) SLUICE_STATUS_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function when it is not OK.
#define SLUICE_RETURN_IF_ERROR(expr)                                  \
  do {                                                                \
    if (absl::Status sluice_status_ = (expr); !sluice_status_.ok()) { \
      return sluice_status_;                                          \
    }                                                                 \
  } while (false)

// Evaluates `rexpr` (a StatusOr); returns its status when not OK, else moves its value into `lhs`.
#define SLUICE_ASSIGN_OR_RETURN(lhs, rexpr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_STATUS_CONCAT_(sluice_statusor_, __LINE__), lhs, rexpr)

// `statusor` and `lhs` name a variable and a declaration, which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define SLUICE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                  \
  if (!statusor.ok()) {                                     \
    return std::move(statusor).status();                    \
  }                                                         \
  lhs = *std::move(statusor)
// NOLINTEND(bugprone-macro-parentheses)

#endif  // SLUICE_STATUS_MACROS_H_
