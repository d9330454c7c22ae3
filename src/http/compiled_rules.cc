#include "src/http/compiled_rules.h"

#include <algorithm>
#include <string>
#include <string_view>

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

std::string EscapeKeyComponent(std::string_view component) {
  // JoinKeyComponents() of this one component (docs/keys.md): each backslash and ':' gets a
  // backslash before it. Sized once and written through a pointer: every request escapes its
  // identity.
  std::string out(2 * component.size(), '\0');
  char* p = out.data();
  for (const char c : component) {
    if (c == '\\' || c == ':') *p++ = '\\';
    *p++ = c;
  }
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

std::string BuildCounterKeyFromEscaped(const CompiledPolicy& policy,
                                       std::string_view escaped_identity) {
  std::string key;
  key.reserve(policy.key_prefix.size() + escaped_identity.size() + policy.key_suffix.size());
  // JoinKeyComponents() joins with ':' after escaping each component, so the escaped identity
  // between the precomputed prefix ("area:route:tier:") and suffix (":policy") gives the same key
  // as joining all five components.
  key.append(policy.key_prefix).append(escaped_identity).append(policy.key_suffix);
  return key;
}

std::string BuildCounterKey(const CompiledPolicy& policy, std::string_view identity) {
  return BuildCounterKeyFromEscaped(policy, EscapeKeyComponent(identity));
}

}  // namespace sluice::http::internal
