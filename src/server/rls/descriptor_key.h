// StoreKey(): the store key of one limit of one request descriptor (docs/keys.md, "sluiced").
//
// The key is a tagged key (sluice/key.h): the tag is the domain and the descriptor's entries, the
// name the limit's algorithm and period. Each descriptor is then its own shard on Redis Cluster,
// so one busy domain spreads over every shard instead of loading the one that would hold a
// domain-wide tag, while the limits of one descriptor stay together.
//
// Example:
//   const DescriptorEntry entries[] = {{"remote_address", "10.0.0.1"}};
//   std::string key = StoreKey("edge", entries, Limit{.limit = 3, .period = 60s});
//   // "{edge:remote_address:10.0.0.1}fixed_window:60000" (the period in milliseconds)
//
// Thread safety: a pure function.
#ifndef SLUICE_SERVER_RLS_DESCRIPTOR_KEY_H_
#define SLUICE_SERVER_RLS_DESCRIPTOR_KEY_H_

#include <string>
#include <string_view>

#include "absl/types/span.h"

#include "sluice/config.h"
#include "sluice/limit.h"

namespace sluice::server {

// StoreKey()
//
// Returns the key under which `limit` of the descriptor `entries` in `domain` keeps its state:
// TaggedKey(JoinKeyComponents({domain, key1, value1, key2, value2, ...}),
//           JoinKeyComponents({algorithm, period in ms})).
// A changed quota keeps its counter, as a raised limit should take effect mid-window; a changed
// algorithm or period starts a new one, since the old state means something else. Different
// inputs never give the same key.
std::string StoreKey(std::string_view domain, absl::Span<const DescriptorEntry> entries,
                     const Limit& limit);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_RLS_DESCRIPTOR_KEY_H_
