// RateLimitConfig::Match(): the reference's GetLimit() lookup.
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/inlined_vector.h"

#include "sluice/config.h"

#include "src/config/config_tree.h"
#include "src/config/wildcard.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;
using internal::DescriptorNode;

// How an entry found its node; it decides the stats key and, with share_threshold, the counter.
enum class Via { kExact, kWildcard, kDefault };

struct Step {
  Via via;
  const DescriptorNode* node;
};

// The reference matches a wildcard against the joined "key_value" string, so the node's key plus
// '_' must be a literal prefix and the pattern must match the rest.
bool MatchesWildcard(const DescriptorNode& node, std::string_view composite) {
  return composite.size() > node.key.size() && composite.substr(0, node.key.size()) == node.key &&
         composite[node.key.size()] == '_' &&
         internal::WildcardMatch(node.value, composite.substr(node.key.size() + 1));
}

void AppendKeyValue(std::string& out, std::string_view key, std::string_view value) {
  out.append(key);
  if (!value.empty()) {
    out.append("_").append(value);
  }
}

std::string StatsKey(std::string_view domain, absl::Span<const DescriptorEntry> entries,
                     absl::Span<const Step> steps, bool detailed) {
  std::string out(domain);
  for (size_t i = 0; i < steps.size(); ++i) {
    const DescriptorEntry& e = entries[i];
    const DescriptorNode& node = *steps[i].node;
    out.push_back('.');
    const bool shared = steps[i].via == Via::kWildcard && node.share_threshold;
    if (shared) {
      AppendKeyValue(out, e.key, node.value);
    } else if (detailed || steps[i].via == Via::kExact) {
      AppendKeyValue(out, e.key, e.value);
    } else if (steps[i].via == Via::kWildcard) {
      AppendKeyValue(out, e.key, node.value_to_metric ? e.value : std::string_view(node.value));
    } else {
      AppendKeyValue(out, e.key, node.value_to_metric ? e.value : std::string_view());
    }
  }
  return out;
}

}  // namespace

std::optional<RuleMatch> RateLimitConfig::Match(std::string_view domain,
                                                absl::Span<const DescriptorEntry> entries) const {
  const auto domain_it = tree_->domains.find(AbslView(domain));
  if (domain_it == tree_->domains.end() || entries.empty()) {
    return std::nullopt;
  }
  const internal::DomainTree& tree = domain_it->second;

  absl::InlinedVector<Step, 8> steps;
  std::string composite;  // Reused: "key_value" of the current entry.
  const DescriptorNode* level = &tree.root;
  for (size_t i = 0; i < entries.size(); ++i) {
    const DescriptorEntry& e = entries[i];
    composite.assign(e.key).append("_").append(e.value);
    Step step{Via::kExact, level->FindChild(composite)};
    if (step.node == nullptr) {
      for (const size_t index : level->wildcard_children) {
        const DescriptorNode& candidate = level->children[index];
        if (MatchesWildcard(candidate, composite)) {
          step = {Via::kWildcard, &candidate};
          break;
        }
      }
    }
    if (step.node == nullptr) {
      step = {Via::kDefault, level->FindChild(AbslView(e.key))};
    }
    if (step.node == nullptr) {
      return std::nullopt;
    }
    steps.push_back(step);

    if (i + 1 < entries.size()) {
      // More entries than this branch has levels: the reference stops here with no limit.
      if (step.node->children.empty()) {
        return std::nullopt;
      }
      level = step.node;
      continue;
    }
    // The last entry: only the node it reached counts, never a shallower one.
    const Rule* rule = step.node->rule.get();
    if (rule == nullptr) {
      return std::nullopt;
    }
    RuleMatch match;
    match.rule = rule;
    match.domain = tree.name;
    match.counter_entries.reserve(entries.size());
    for (size_t j = 0; j < steps.size(); ++j) {
      const bool shared = steps[j].via == Via::kWildcard && steps[j].node->share_threshold;
      match.counter_entries.push_back(
          {entries[j].key, shared ? std::string_view(steps[j].node->value) : entries[j].value});
    }
    match.stats_key = StatsKey(tree.name, entries, steps, rule->detailed_metric);
    return match;
  }
  return std::nullopt;
}

}  // namespace sluice
