// The YAML front end shared by the rate limit config (src/config/) and the middleware config
// (src/http/config_yaml.cc): reading a document safely, and errors located as
// "file:line:column: field: what is wrong".
//
// yaml-cpp's exceptions never leave these functions. A document is read with LoadFirstDocument(),
// which cannot loop on malformed input, then checked with CheckExpandedSize() before anything
// walks it, so that aliases ("billion laughs") and deep nesting cannot blow up a later walk.
#ifndef SLUICE_YAML_YAML_DOCUMENT_H_
#define SLUICE_YAML_YAML_DOCUMENT_H_

#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace sluice::internal {

// The file being read, for error messages.
class FileContext {
 public:
  explicit FileContext(std::string name) : name_(std::move(name)) {}

  const std::string& Name() const { return name_; }

  // Returns "file:line:column" (1-based), or "file" when the mark is unknown.
  std::string Location(const YAML::Mark& mark) const;

  // Returns InvalidArgument "file:line:column: field: message" ("file:line:column: message" when
  // `field` is empty).
  absl::Status Error(const YAML::Mark& mark, absl::string_view field,
                     absl::string_view message) const;

 private:
  std::string name_;
};

// LoadFirstDocument()
//
// Returns the first YAML document of `content` (a null node when there is none), or
// InvalidArgument for malformed YAML and when a later document is not empty: the reference reads
// only the first document, so a second one would be silently ignored. Never throws YAML
// exceptions, and always returns (unlike yaml-cpp 0.7's LoadAll(); see yaml_document.cc).
absl::StatusOr<YAML::Node> LoadFirstDocument(const FileContext& file, const std::string& content);

// Bounds on a document once its aliases are expanded (CheckExpandedSize()). A real config has at
// most some thousands of descriptors of a few nodes each, nested a few levels deep.
inline constexpr size_t kMaxExpandedNodes = 1'000'000;
inline constexpr size_t kMaxExpandedScalarBytes = 64 << 20;
inline constexpr int kMaxNestingDepth = 256;

// CheckExpandedSize()
//
// Returns OK when `root`, parsed from `source_bytes` bytes of YAML, with every alias expanded, has
// at most max(kMaxExpandedNodes, source_bytes) nodes holding at most max(kMaxExpandedScalarBytes,
// source_bytes) bytes of scalars, nested at most kMaxNestingDepth deep; else InvalidArgument
// located at the node where a bound was crossed. A file without aliases is never refused for its
// size (no node or scalar byte is shorter than its text), only for its depth. yaml-cpp shares an
// aliased node rather than copying it, so a file of a few lines can stand for an exponential tree
// (a "billion laughs" document), and an anchor used inside itself (`&a [*a]`) makes a cycle. Every
// later walk of the tree is linear in its expanded size, so after this check all of them are
// bounded. Iterative, so the check itself needs no stack however deep the document.
absl::Status CheckExpandedSize(const FileContext& file, const YAML::Node& root,
                               size_t source_bytes);

}  // namespace sluice::internal

#endif  // SLUICE_YAML_YAML_DOCUMENT_H_
