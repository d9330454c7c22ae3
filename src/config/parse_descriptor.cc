// ParseConfigFile(): the file, its domain and the descriptor tree.
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

#include "sluice/status_macros.h"

#include "src/config/parse.h"

namespace sluice::internal {
namespace {

absl::Status ParseDescriptors(const FileContext& file, const YAML::Node& list,
                              const std::string& list_field, const std::string& parent_key,
                              DescriptorNode& parent);

absl::Status ParseDescriptor(const FileContext& file, const YAML::Node& item,
                             const std::string& path, const std::string& parent_key,
                             DescriptorNode& parent) {
  SLUICE_ASSIGN_OR_RETURN(const MapReader d, MapReader::Read(file, item, path, Scope::kDescriptor));
  DescriptorNode node;
  SLUICE_ASSIGN_OR_RETURN(node.key, d.String("key"));
  if (node.key.empty()) {
    return d.Error("key", "descriptor has empty key");
  }
  // As in the reference, an empty or null value is no value: the node matches any value.
  SLUICE_ASSIGN_OR_RETURN(node.value, d.String("value"));
  node.composite = node.value.empty() ? node.key : absl::StrCat(node.key, "_", node.value);
  node.location = file.Location(d.Mark());
  node.wildcard = node.value.find('*') != std::string::npos;

  const std::string config_key = absl::StrCat(parent_key, ".", node.composite);
  if (const DescriptorNode* first = parent.FindChild(node.composite)) {
    return file.Error(d.Mark(), path,
                      absl::StrCat("duplicate descriptor composite key '", config_key,
                                   "' (first defined at ", first->location, ")"));
  }

  SLUICE_ASSIGN_OR_RETURN(node.value_to_metric, d.Bool("value_to_metric"));
  SLUICE_ASSIGN_OR_RETURN(node.share_threshold, d.Bool("share_threshold"));
  if (node.share_threshold && !node.wildcard) {
    return d.Error("share_threshold",
                   absl::StrCat("share_threshold can only be used with wildcard values "
                                "(containing '*'), but found key '",
                                node.composite, "'"));
  }

  RuleContext context;
  context.config_key = config_key;
  context.location = node.location;
  SLUICE_ASSIGN_OR_RETURN(context.shadow_mode, d.Bool("shadow_mode"));
  SLUICE_ASSIGN_OR_RETURN(context.quota_mode, d.Bool("quota_mode"));
  SLUICE_ASSIGN_OR_RETURN(context.detailed_metric, d.Bool("detailed_metric"));
  if (const MapEntry* metadata = d.Find("metadata")) {
    if (!metadata->value.IsMap()) {
      return WithReferenceWording(d.Error("metadata", "expected a mapping"), kReferenceLoadError);
    }
    SLUICE_ASSIGN_OR_RETURN(context.metadata_json,
                            YamlToJson(file, metadata->value, d.Field("metadata")));
  }
  SLUICE_ASSIGN_OR_RETURN(node.rule, ParseRule(file, d, std::move(context)));

  if (const MapEntry* children = d.Find("descriptors")) {
    SLUICE_RETURN_IF_ERROR(
        ParseDescriptors(file, children->value, d.Field("descriptors"), config_key, node));
  }

  const size_t index = parent.children.size();
  parent.by_composite.emplace(node.composite, index);
  if (node.wildcard) {
    parent.wildcard_children.push_back(index);
  }
  parent.children.push_back(std::move(node));
  return absl::OkStatus();
}

absl::Status ParseDescriptors(const FileContext& file, const YAML::Node& list,
                              const std::string& list_field, const std::string& parent_key,
                              DescriptorNode& parent) {
  if (list.IsNull()) {
    return absl::OkStatus();
  }
  if (!list.IsSequence()) {
    return WithReferenceWording(
        file.Error(list.Mark(), list_field, "expected a list of descriptors"), kReferenceLoadError);
  }
  for (size_t i = 0; i < list.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(
        ParseDescriptor(file, list[i], absl::StrCat(list_field, "[", i, "]"), parent_key, parent));
  }
  return absl::OkStatus();
}

absl::StatusOr<DomainTree> ParseRoot(const FileContext& file, const std::string& content) {
  absl::StatusOr<YAML::Node> loaded = LoadFirstDocument(file, content);
  if (!loaded.ok()) return WithReferenceWording(loaded.status(), kReferenceLoadError);
  const YAML::Node root = *std::move(loaded);
  if (root.IsNull()) {
    return file.Error(YAML::Mark(), "domain", "config file cannot have empty domain");
  }
  // Before any recursive walk: aliases can make the tree exponential or cyclic.
  SLUICE_RETURN_IF_ERROR(CheckExpandedSize(file, root, content.size()));

  SLUICE_ASSIGN_OR_RETURN(const MapReader r, MapReader::Read(file, root, "", Scope::kRoot));
  DomainTree tree;
  SLUICE_ASSIGN_OR_RETURN(tree.name, r.String("domain"));
  if (tree.name.empty()) {
    return r.Error("domain", "config file cannot have empty domain");
  }
  tree.location = file.Location(r.Find("domain")->key_mark);
  if (const MapEntry* descriptors = r.Find("descriptors")) {
    SLUICE_RETURN_IF_ERROR(
        ParseDescriptors(file, descriptors->value, "descriptors", tree.name, tree.root));
  }
  return tree;
}

}  // namespace

absl::StatusOr<DomainTree> ParseConfigFile(const ConfigSource& source) {
  const FileContext file(source.name);
  // yaml-cpp throws from node accessors too (and DeepRecursion on absurd nesting); no exception
  // may leave the module, so every one becomes a located InvalidArgument.
  try {
    return ParseRoot(file, source.content);
  } catch (const YAML::Exception& e) {
    return WithReferenceWording(file.Error(e.mark, "", absl::StrCat("invalid YAML: ", e.msg)),
                                kReferenceLoadError);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(source.name, ": ", e.what()));
  }
}

}  // namespace sluice::internal
