// The parsed configuration: one tree of descriptor nodes per domain, as the reference builds it.
//
// Nodes are looked up by their composite key, `key` or `key_value`, exactly as the reference's
// maps are; that is also what makes `{key: a_b, value: c}` and `{key: a, value: b_c}` duplicates.
// Built once by the parser, then only read (RateLimitConfig::Match).
#ifndef SLUICE_CONFIG_CONFIG_TREE_H_
#define SLUICE_CONFIG_CONFIG_TREE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

#include "sluice/config.h"

namespace sluice::internal {

struct DescriptorNode {
  std::string key;
  // "" when the node has no value (it then matches any value of `key`).
  std::string value;
  // `key`, or `key_value` when there is a value.
  std::string composite;
  // "file:line:column" of the descriptor, for duplicate errors.
  std::string location;
  // The value holds a `*`: matched as a pattern when no exact child matches.
  bool wildcard = false;
  bool value_to_metric = false;
  // Only on wildcard nodes: all matching values share one counter (the pattern is the key).
  bool share_threshold = false;
  // Null when the node has no rate limit. Heap-allocated so RuleMatch::rule stays valid.
  std::unique_ptr<const Rule> rule;

  std::vector<DescriptorNode> children;
  // Composite key -> index into `children`.
  absl::flat_hash_map<std::string, size_t> by_composite;
  // Indices of wildcard children, in file order.
  std::vector<size_t> wildcard_children;

  const DescriptorNode* FindChild(absl::string_view composite) const {
    auto it = by_composite.find(composite);
    return it == by_composite.end() ? nullptr : &children[it->second];
  }
};

struct DomainTree {
  std::string name;
  // "file:line:column" of the `domain` key, to name both files of a duplicate.
  std::string location;
  // The root's children are the file's top-level `descriptors`; the root itself has no key.
  DescriptorNode root;
};

struct ConfigTree {
  absl::flat_hash_map<std::string, DomainTree> domains;
};

}  // namespace sluice::internal

#endif  // SLUICE_CONFIG_CONFIG_TREE_H_
