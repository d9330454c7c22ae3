#include "src/config/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "yaml-cpp/eventhandler.h"

#include "sluice/status_macros.h"

#include "src/util/json_string.h"
#include "src/util/strings.h"

namespace sluice::internal {
namespace {

// yaml-cpp's tags: "?" for a plain scalar, "!" for a quoted one, the full URI for an explicit tag.
constexpr absl::string_view kTagPrefix = "tag:yaml.org,2002:";

bool IsOneOf(absl::string_view text, std::initializer_list<absl::string_view> words) {
  for (absl::string_view word : words) {
    if (text == word) {
      return true;
    }
  }
  return false;
}

// YAML 1.1 integers as yaml.v2 reads them: [-+]digits with '_' separators, 0x.., 0b.., 0o...
bool LooksLikeInt(absl::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    text.remove_prefix(1);
  }
  if (text.empty()) {
    return false;
  }
  absl::string_view digits = "0123456789_";
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    digits = "0123456789abcdefABCDEF_";
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'o')) {
    text.remove_prefix(2);
  }
  return text.find_first_not_of(digits) == absl::string_view::npos && absl::ascii_isdigit(text[0]);
}

bool LooksLikeFloat(absl::string_view text) {
  if (IsOneOf(text, {".inf", ".Inf", ".INF", "+.inf", "-.inf", "+.Inf", "-.Inf", ".nan", ".NaN",
                     ".NAN"})) {
    return true;
  }
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    text.remove_prefix(1);
  }
  bool digit = false;
  bool dot = false;
  size_t i = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (absl::ascii_isdigit(c) || c == '_') {
      digit = digit || c != '_';
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!digit) {
    return false;
  }
  if (i == text.size()) {
    return dot;
  }
  if (text[i] != 'e' && text[i] != 'E') {
    return false;
  }
  absl::string_view exponent = text.substr(i + 1);
  if (!exponent.empty() && (exponent[0] == '-' || exponent[0] == '+')) {
    exponent.remove_prefix(1);
  }
  return !exponent.empty() && std::all_of(exponent.begin(), exponent.end(), absl::ascii_isdigit);
}

absl::string_view KindName(ScalarKind kind) {
  switch (kind) {
    case ScalarKind::kNull:
      return "null";
    case ScalarKind::kBool:
      return "a boolean";
    case ScalarKind::kInt:
      return "an integer";
    case ScalarKind::kFloat:
      return "a number";
    case ScalarKind::kString:
      return "a string";
  }
  return "";
}

absl::string_view NodeTypeName(const YAML::Node& node) {
  if (node.IsSequence()) {
    return "a list";
  }
  if (node.IsMap()) {
    return "a mapping";
  }
  return KindName(ResolveScalar(node));
}

// Appends `text` as a JSON string, or InvalidArgument at `mark` when it is not UTF-8.
absl::Status AppendString(const FileContext& file, const YAML::Mark& mark, absl::string_view path,
                          absl::string_view text, std::string* out) {
  if (!AppendJsonString(StdView(text), out)) {
    return file.Error(mark, path, "is not valid UTF-8");
  }
  return absl::OkStatus();
}

absl::Status AppendJson(const FileContext& file, const YAML::Node& node, absl::string_view path,
                        std::string* out) {
  if (node.IsMap()) {
    out->push_back('{');
    bool first = true;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar() || ResolveScalar(kv.first) != ScalarKind::kString) {
        return file.Error(kv.first.Mark(), path, "mapping keys must be strings");
      }
      if (!first) {
        out->push_back(',');
      }
      first = false;
      SLUICE_RETURN_IF_ERROR(AppendString(file, kv.first.Mark(), path, kv.first.Scalar(), out));
      out->push_back(':');
      SLUICE_RETURN_IF_ERROR(AppendJson(file, kv.second, JoinField(path, kv.first.Scalar()), out));
    }
    out->push_back('}');
    return absl::OkStatus();
  }
  if (node.IsSequence()) {
    out->push_back('[');
    for (size_t i = 0; i < node.size(); ++i) {
      if (i > 0) {
        out->push_back(',');
      }
      SLUICE_RETURN_IF_ERROR(AppendJson(file, node[i], absl::StrCat(path, "[", i, "]"), out));
    }
    out->push_back(']');
    return absl::OkStatus();
  }
  switch (ResolveScalar(node)) {
    case ScalarKind::kNull:
      out->append("null");
      break;
    case ScalarKind::kBool: {
      const std::string lower = absl::AsciiStrToLower(node.Scalar());
      out->append(IsOneOf(lower, {"y", "yes", "true", "on"}) ? "true" : "false");
      break;
    }
    case ScalarKind::kInt:
    case ScalarKind::kFloat: {
      // JSON numbers are plain decimals; hex, '_' separators and .inf stay readable as strings.
      double number = 0;
      if (absl::SimpleAtod(node.Scalar(), &number) && std::isfinite(number) &&
          node.Scalar().find_first_not_of("0123456789+-.eE") == std::string::npos) {
        out->append(node.Scalar().front() == '+' ? node.Scalar().substr(1) : node.Scalar());
      } else {
        SLUICE_RETURN_IF_ERROR(AppendString(file, node.Mark(), path, node.Scalar(), out));
      }
      break;
    }
    case ScalarKind::kString:
      SLUICE_RETURN_IF_ERROR(AppendString(file, node.Mark(), path, node.Scalar(), out));
      break;
  }
  return absl::OkStatus();
}

}  // namespace

ScalarKind ResolveScalar(const YAML::Node& node) {
  if (node.IsNull()) {
    return ScalarKind::kNull;
  }
  const std::string& tag = node.Tag();
  if (tag == "!") {
    return ScalarKind::kString;
  }
  if (absl::StartsWith(tag, kTagPrefix)) {
    const absl::string_view type = absl::string_view(tag).substr(kTagPrefix.size());
    if (type == "bool") {
      return ScalarKind::kBool;
    }
    if (type == "int") {
      return ScalarKind::kInt;
    }
    if (type == "float") {
      return ScalarKind::kFloat;
    }
    if (type == "null") {
      return ScalarKind::kNull;
    }
    return ScalarKind::kString;
  }
  const std::string& text = node.Scalar();
  if (IsOneOf(text, {"", "~", "null", "Null", "NULL"})) {
    return ScalarKind::kNull;
  }
  if (IsOneOf(text,
              {"y",    "Y",    "yes",   "Yes",   "YES",   "n",  "N",  "no", "No",  "NO",  "true",
               "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"})) {
    return ScalarKind::kBool;
  }
  if (LooksLikeInt(text)) {
    return ScalarKind::kInt;
  }
  if (LooksLikeFloat(text)) {
    return ScalarKind::kFloat;
  }
  return ScalarKind::kString;
}

std::string JoinField(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

absl::Status WithReferenceWording(absl::Status status, absl::string_view phrase) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(status.message(), " (reference: \"", phrase, "\")"));
}

absl::StatusOr<MapReader> MapReader::Read(const FileContext& file, const YAML::Node& node,
                                          std::string path, Scope scope) {
  if (!node.IsMap()) {
    absl::Status error =
        file.Error(node.Mark(), path, absl::StrCat("expected a mapping, got ", NodeTypeName(node)));
    // A list element (path "...[i]") is what the reference's key check words its own way; any
    // other non-mapping fails its YAML decoding.
    if (!path.empty() && path.back() == ']') {
      const std::string shown = node.IsScalar() ? node.Scalar() : std::string(NodeTypeName(node));
      return WithReferenceWording(
          std::move(error),
          absl::StrCat("config error, yaml file contains list of type other than map: ", shown));
    }
    return WithReferenceWording(std::move(error), kReferenceLoadError);
  }
  MapReader reader(file, std::move(path), node.Mark());
  absl::flat_hash_set<std::string> seen;
  for (const auto& kv : node) {
    const YAML::Node& key = kv.first;
    if (!key.IsScalar() || ResolveScalar(key) != ScalarKind::kString) {
      const std::string shown = key.IsScalar() ? key.Scalar() : std::string(NodeTypeName(key));
      return WithReferenceWording(
          file.Error(key.Mark(), reader.path_,
                     absl::StrCat("key is not a string: ", shown, " (", NodeTypeName(key), ")")),
          absl::StrCat("config error, key is not of type string: ", shown));
    }
    const std::string& name = key.Scalar();
    const std::string field = reader.Field(name);
    if (!IsAllowedKey(scope, name)) {
      absl::Status error = file.Error(key.Mark(), field, DisallowedKeyMessage(scope, name));
      // The reference checks keys against one set for every level: a key valid elsewhere passes
      // its check (and is then ignored), an unknown one is refused in these words.
      if (!IsKnownKey(name)) {
        return WithReferenceWording(std::move(error),
                                    absl::StrCat("config error, unknown key '", name, "'"));
      }
      return error;
    }
    if (!seen.insert(name).second) {
      // yaml-cpp keeps both entries of a repeated key; the reference's YAML library rejects them.
      return WithReferenceWording(
          file.Error(key.Mark(), field, absl::StrCat("key '", name, "' is repeated")),
          kReferenceLoadError);
    }
    reader.entries_.push_back(MapEntry{name, key.Mark(), kv.second});
  }
  return reader;
}

const MapEntry* MapReader::Find(absl::string_view key) const {
  for (const MapEntry& entry : entries_) {
    if (entry.key == key) {
      return &entry;
    }
  }
  return nullptr;
}

absl::Status MapReader::Error(absl::string_view key, absl::string_view message) const {
  const MapEntry* entry = Find(key);
  return file_->Error(entry != nullptr ? entry->key_mark : mark_, Field(key), message);
}

absl::StatusOr<std::string> MapReader::String(absl::string_view key) const {
  const MapEntry* entry = Find(key);
  if (entry == nullptr || entry->value.IsNull()) {
    return std::string();
  }
  if (!entry->value.IsScalar()) {
    return WithReferenceWording(
        Error(key, absl::StrCat("expected a string, got ", NodeTypeName(entry->value))),
        kReferenceLoadError);
  }
  return entry->value.Scalar();
}

absl::StatusOr<bool> MapReader::Bool(absl::string_view key) const {
  const MapEntry* entry = Find(key);
  if (entry == nullptr || entry->value.IsNull()) {
    return false;
  }
  if (!entry->value.IsScalar() || ResolveScalar(entry->value) != ScalarKind::kBool) {
    std::string shown =
        entry->value.IsScalar() ? absl::StrCat(" '", entry->value.Scalar(), "'") : std::string();
    return WithReferenceWording(
        Error(key, absl::StrCat("expected true or false, got ", NodeTypeName(entry->value), shown)),
        ResolveScalar(entry->value) == ScalarKind::kFloat ? kReferenceCheckError
                                                          : kReferenceLoadError);
  }
  const std::string lower = absl::AsciiStrToLower(entry->value.Scalar());
  return IsOneOf(lower, {"y", "yes", "true", "on"});
}

absl::StatusOr<std::optional<uint64_t>> MapReader::UnsignedInt(absl::string_view key,
                                                               uint64_t max) const {
  const MapEntry* entry = Find(key);
  if (entry == nullptr) {
    return std::optional<uint64_t>();
  }
  const YAML::Node& value = entry->value;
  if (value.IsNull()) {
    return Error(key, "expected an integer, got an empty value");
  }
  if (!value.IsScalar()) {
    return WithReferenceWording(
        Error(key, absl::StrCat("expected an integer, got ", NodeTypeName(value))),
        kReferenceLoadError);
  }
  const ScalarKind kind = ResolveScalar(value);
  const std::string& text = value.Scalar();
  if (kind == ScalarKind::kFloat) {
    // The reference's key check refuses every float value in these words.
    return WithReferenceWording(Error(key, absl::StrCat("expected a whole number, got ", text)),
                                kReferenceCheckError);
  }
  if (kind != ScalarKind::kInt) {
    return WithReferenceWording(
        Error(key, absl::StrCat("expected an integer, got ", KindName(kind), " '", text, "'")),
        kReferenceLoadError);
  }
  std::string digits;
  for (const char c : text) {
    if (c != '_') {
      digits.push_back(c);
    }
  }
  if (!digits.empty() && digits[0] == '+') {
    digits.erase(0, 1);
  }
  if (!digits.empty() && digits[0] == '-') {
    return WithReferenceWording(Error(key, absl::StrCat("must not be negative, got ", text)),
                                kReferenceLoadError);
  }
  if (digits.find_first_not_of("0123456789") != std::string::npos) {
    return Error(key, absl::StrCat("expected a decimal integer, got ", text));
  }
  if (digits.size() > 1 && digits[0] == '0') {
    return Error(
        key,
        absl::StrCat("'", text, "' has a leading zero, which YAML 1.1 reads as octal; remove it"));
  }
  uint64_t number = 0;
  if (!absl::SimpleAtoi(digits, &number) || number > max) {
    // Past 2^32 - 1 the reference's decoding into its uint32 fails.
    absl::Status error = Error(key, absl::StrCat("must be at most ", max, ", got ", text));
    return max >= 0xffffffffu ? WithReferenceWording(std::move(error), kReferenceLoadError) : error;
  }
  return std::optional<uint64_t>(number);
}

absl::StatusOr<std::string> YamlToJson(const FileContext& file, const YAML::Node& node,
                                       absl::string_view path) {
  std::string out;
  SLUICE_RETURN_IF_ERROR(AppendJson(file, node, path, &out));
  return out;
}

}  // namespace sluice::internal
