// StoreKey(): the store key of one limit of one request descriptor.
//
// Example:
//   const DescriptorEntry entries[] = {{"remote_address", "10.0.0.1"}};
//   std::string key = StoreKey("edge", entries, Limit{.limit = 3, .period = 60s});
//   // "edge|remote_address=10.0.0.1|fixed_window/60000" (the period in milliseconds)
//
// Thread safety: a pure function.
#ifndef SLUICE_SERVER_DESCRIPTOR_KEY_H_
#define SLUICE_SERVER_DESCRIPTOR_KEY_H_

#include <string>
#include <string_view>

#include "absl/types/span.h"

#include "sluice/config.h"
#include "sluice/limit.h"

namespace sluice::server {

// StoreKey()
//
// Returns the key under which `limit` of the descriptor `entries` in `domain` keeps its state:
// the domain, the counter entries, and the limit's algorithm and period (a changed quota keeps its
// counter, as a raised limit should take effect mid-window; a changed algorithm or period starts a
// new one, since the old state means something else). Components are escaped so that different
// inputs never give the same key.
std::string StoreKey(std::string_view domain, absl::Span<const DescriptorEntry> entries,
                     const Limit& limit);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_DESCRIPTOR_KEY_H_
