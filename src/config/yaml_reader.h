// Reading yaml-cpp nodes with errors that name the file, line, column and field.
//
// yaml-cpp is translated here and nowhere else: its exceptions never leave this module (the load
// functions catch them), and every error it lets us detect is an InvalidArgument whose message is
// "file:line:column: field: what is wrong". Scalars are typed the way the reference's YAML library
// (gopkg.in/yaml.v2, YAML 1.1) types them, since yaml-cpp hands us only the raw text.
#ifndef SLUICE_CONFIG_YAML_READER_H_
#define SLUICE_CONFIG_YAML_READER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

#include "src/config/schema.h"

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

// How the reference's YAML 1.1 reader types a scalar.
enum class ScalarKind { kNull, kBool, kInt, kFloat, kString };

// Returns the kind of a scalar or null node (quoted scalars are always strings).
ScalarKind ResolveScalar(const YAML::Node& node);

// Returns "a.b" or "b" when `path` is empty.
std::string JoinField(absl::string_view path, absl::string_view key);

// One key of a mapping.
struct MapEntry {
  std::string key;
  YAML::Mark key_mark;
  YAML::Node value;
};

// A mapping whose keys have been checked against the keys allowed at its position.
class MapReader {
 public:
  // Read()
  //
  // Returns the entries of `node`, a mapping at `path` (a field path such as "descriptors[0]",
  // "" for the root), or InvalidArgument when `node` is not a mapping, or a key is not a string,
  // repeated, unknown or misplaced for `scope`.
  static absl::StatusOr<MapReader> Read(const FileContext& file, const YAML::Node& node,
                                        std::string path, Scope scope);

  const std::string& Path() const { return path_; }
  const YAML::Mark& Mark() const { return mark_; }
  const std::vector<MapEntry>& Entries() const { return entries_; }

  // Returns the entry for `key`, or null when absent.
  const MapEntry* Find(absl::string_view key) const;

  // Returns whether `key` is present (even with a null value).
  bool Has(absl::string_view key) const { return Find(key) != nullptr; }

  // Returns the field path of `key`, e.g. "descriptors[0].rate_limit.unit".
  std::string Field(absl::string_view key) const { return JoinField(path_, key); }

  // Returns an error located at `key` (or at the mapping itself when `key` is absent).
  absl::Status Error(absl::string_view key, absl::string_view message) const;

  // Returns the scalar text of `key`: "" when absent or null (as the reference reads an absent or
  // null string), or InvalidArgument when the value is a sequence or mapping.
  absl::StatusOr<std::string> String(absl::string_view key) const;

  // Returns the boolean `key`: false when absent or null, or InvalidArgument unless it is a YAML
  // boolean (true/false, yes/no, on/off, y/n).
  absl::StatusOr<bool> Bool(absl::string_view key) const;

  // Returns the unsigned decimal integer `key` (nullopt when absent), or InvalidArgument when it is
  // null, not a plain decimal integer, negative or above `max`.
  absl::StatusOr<std::optional<uint64_t>> UnsignedInt(absl::string_view key, uint64_t max) const;

 private:
  MapReader(const FileContext& file, std::string path, YAML::Mark mark)
      : file_(&file), path_(std::move(path)), mark_(mark) {}

  const FileContext* file_;
  std::string path_;
  YAML::Mark mark_;
  std::vector<MapEntry> entries_;
};

// LoadFirstDocument()
//
// Returns the first YAML document of `content` (a null node when there is none), or
// InvalidArgument for malformed YAML and when a later document is not empty: the reference reads
// only the first document, so a second one would be silently ignored. Never throws YAML
// exceptions, and always returns (unlike yaml-cpp 0.7's LoadAll(); see yaml_reader.cc).
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

// YamlToJson()
//
// Returns `node` as JSON text (mappings with string keys become objects, sequences arrays, scalars
// are typed as ResolveScalar() says), or InvalidArgument at the first non-string mapping key.
absl::StatusOr<std::string> YamlToJson(const FileContext& file, const YAML::Node& node,
                                       absl::string_view path);

}  // namespace sluice::internal

#endif  // SLUICE_CONFIG_YAML_READER_H_
