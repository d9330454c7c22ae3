#include "src/http/compiled_rules.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "sluice/key.h"

#include "src/http/request_target.h"

namespace sluice::http::internal {

const CompiledTier* TierTable::Find(std::string_view tier) const {
  for (const auto& [name, entry] : named) {
    if (name == tier) return &entry;
  }
  return other ? &*other : nullptr;
}

bool CompiledRoute::Matches(const RequestView& request) const {
  // Any spelling of a method the rule names matches: a router that takes "get" for GET must not
  // see it walk around the GET rule. (HEAD is in `methods` beside GET when the spec says so.)
  if (!methods.empty() &&
      std::none_of(methods.begin(), methods.end(), [&](const std::string& method) {
        return EqualsIgnoreAsciiCase(method, request.method);
      })) {
    return false;
  }
  if (!request.route_template.empty() && path.match() == PathMatch::kTemplate) {
    // The framework matched a template already: compare templates, not paths.
    return path.SameShape(request.route_template);
  }
  return path.Matches(RoutingPath(request.path));
}

const CompiledRoute* CompiledRules::Match(const RequestView& request) const {
  if (!request.policy.empty()) {
    const CompiledRoute* policy = FindPolicy(request.policy);
    return policy != nullptr ? policy : &*unknown_policy;
  }
  for (const CompiledRoute& route : routes) {
    if (route.Matches(request)) return &route;
  }
  return nullptr;
}

const CompiledRoute* CompiledRules::FindPolicy(std::string_view name) const {
  for (const CompiledRoute& policy : policies) {
    if (policy.name == name) return &policy;
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
