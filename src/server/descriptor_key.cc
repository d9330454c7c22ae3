#include "src/server/descriptor_key.h"

#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice::server {
namespace {

// Appends `s` with '\', '|' and '=' escaped, so that joined components can never collide.
void AppendEscaped(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '\\' || c == '|' || c == '=') out.push_back('\\');
    out.push_back(c);
  }
}

}  // namespace

std::string StoreKey(std::string_view domain, absl::Span<const DescriptorEntry> entries,
                     const Limit& limit) {
  std::string key;
  AppendEscaped(key, domain);
  for (const DescriptorEntry& e : entries) {
    key.push_back('|');
    AppendEscaped(key, e.key);
    key.push_back('=');
    AppendEscaped(key, e.value);
  }
  absl::StrAppend(&key, "|", internal::AbslView(AlgorithmName(limit.algorithm)), "/",
                  limit.period.count() / 1000);
  return key;
}

}  // namespace sluice::server
