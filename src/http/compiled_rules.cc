#include "src/http/compiled_rules.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "sluice/key.h"

namespace sluice::http::internal {

const CompiledTier* TierTable::Find(std::string_view tier) const {
  for (const auto& [name, entry] : named) {
    if (name == tier) return &entry;
  }
  return other ? &*other : nullptr;
}

bool CompiledRoute::Matches(const RequestView& request) const {
  if (!methods.empty() &&
      std::find(methods.begin(), methods.end(), request.method) == methods.end()) {
    return false;
  }
  if (!request.route_template.empty() && path.match() == PathMatch::kTemplate) {
    // The framework matched a template already: compare templates, not paths.
    return path.SameShape(request.route_template);
  }
  std::string_view p = request.path;
  p = p.substr(0, std::min(p.find('?'), p.find('#')));
  return path.Matches(p);
}

const CompiledRoute* CompiledRules::Match(const RequestView& request) const {
  for (const CompiledRoute& route : routes) {
    if (route.Matches(request)) return &route;
  }
  return nullptr;
}

std::string IdentityKeyTag(std::string_view identity) {
  std::string tag;
  AppendKeyTag(tag, identity);
  return tag;
}

std::string BuildCounterKeyFromTag(const CompiledPolicy& policy, std::string_view key_tag) {
  // TaggedKey(identity, name) is the tag part followed by the name, so the per-request tag and
  // the policy's precomputed name give the same key.
  std::string key;
  key.reserve(key_tag.size() + policy.key_name.size());
  key.append(key_tag).append(policy.key_name);
  return key;
}

std::string BuildCounterKey(const CompiledPolicy& policy, std::string_view identity) {
  return TaggedKey(identity, policy.key_name);
}

}  // namespace sluice::http::internal
