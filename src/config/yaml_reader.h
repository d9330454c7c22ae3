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
#include "src/yaml/yaml_document.h"

namespace sluice::internal {

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

// The reference's words (envoyproxy/ratelimit's src/config/config_impl.go) for errors that sluice
// words its own way: operators grep for them.
inline constexpr absl::string_view kReferenceLoadError = "error loading config file";
inline constexpr absl::string_view kReferenceCheckError = "error checking config";

// WithReferenceWording()
//
// Returns `status` (an InvalidArgument error from FileContext::Error()) with
// ` (reference: "<phrase>")` appended to its message, so that it carries the reference's wording
// of the same problem beside sluice's own. OK stays OK.
absl::Status WithReferenceWording(absl::Status status, absl::string_view phrase);

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

// YamlToJson()
//
// Returns `node` as JSON text (mappings with string keys become objects, sequences arrays, scalars
// are typed as ResolveScalar() says), or InvalidArgument at the first non-string mapping key.
absl::StatusOr<std::string> YamlToJson(const FileContext& file, const YAML::Node& node,
                                       absl::string_view path);

}  // namespace sluice::internal

#endif  // SLUICE_CONFIG_YAML_READER_H_
