#include "src/server/rls/descriptor_key.h"

#include "absl/strings/str_cat.h"

#include "sluice/key.h"

#include "src/util/strings.h"

namespace sluice::server {

std::string StoreKey(std::string_view domain, absl::Span<const DescriptorEntry> entries,
                     const Limit& limit) {
  // JoinKeyComponents() of domain, key1, value1, ... written in place: the list always has an odd
  // length (domain, then pairs), so it gives back the domain and the entries.
  size_t size = domain.size();
  for (const DescriptorEntry& e : entries) size += e.key.size() + e.value.size() + 2;
  std::string tag;
  tag.reserve(size);
  AppendKeyComponent(tag, domain);
  for (const DescriptorEntry& e : entries) {
    tag.push_back(':');
    AppendKeyComponent(tag, e.key);
    tag.push_back(':');
    AppendKeyComponent(tag, e.value);
  }
  // Algorithm names hold no ':' or '\': the name is already JoinKeyComponents() of its two parts.
  const std::string name = absl::StrCat(internal::AbslView(AlgorithmName(limit.algorithm)), ":",
                                        limit.period.count() / 1000);
  return TaggedKey(tag, name);
}

}  // namespace sluice::server
