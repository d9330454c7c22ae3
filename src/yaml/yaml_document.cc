#include "src/yaml/yaml_document.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yaml-cpp/eventhandler.h"

namespace sluice::internal {
namespace {

// Sees one document's parse events: where its first non-null node is, if it has one.
class DocumentProbe : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { last_mark_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t /*anchor*/) override { last_mark_ = mark; }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t /*anchor*/) override { Content(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                const std::string& /*value*/) override {
    Content(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/,
                       YAML::anchor_t /*anchor*/, YAML::EmitterStyle::value /*style*/) override {
    Content(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                  YAML::EmitterStyle::value /*style*/) override {
    Content(mark);
  }
  void OnMapEnd() override {}

  // Where the document's first node that is not null starts; nullopt for an empty document.
  const std::optional<YAML::Mark>& content() const { return content_; }
  // Where the last event was.
  const YAML::Mark& last_mark() const { return last_mark_; }
  // Forgets the document seen, for the next one.
  void Reset() { content_.reset(); }

 private:
  void Content(const YAML::Mark& mark) {
    last_mark_ = mark;
    if (!content_.has_value()) content_ = mark;
  }

  std::optional<YAML::Mark> content_;
  YAML::Mark last_mark_ = YAML::Mark::null_mark();
};

}  // namespace

std::string FileContext::Location(const YAML::Mark& mark) const {
  if (mark.is_null() || mark.line < 0) {
    return name_;
  }
  return absl::StrCat(name_, ":", mark.line + 1, ":", mark.column + 1);
}

absl::Status FileContext::Error(const YAML::Mark& mark, absl::string_view field,
                                absl::string_view message) const {
  if (field.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(Location(mark), ": ", message));
  }
  return absl::InvalidArgumentError(absl::StrCat(Location(mark), ": ", field, ": ", message));
}

absl::StatusOr<YAML::Node> LoadFirstDocument(const FileContext& file, const std::string& content) {
  try {
    // yaml-cpp 0.7's LoadAll() can loop forever, allocating a node per turn: after some malformed
    // input (a lone ',' is enough) its parser reports an empty document without consuming anything,
    // again and again (jbeder/yaml-cpp#1040). So the documents are walked here, with a bound: each
    // one takes at least a byte of input, so more documents than bytes means the parser is stuck.
    std::istringstream stream(content);
    YAML::Parser parser(stream);
    DocumentProbe probe;
    for (size_t documents = 0; parser.HandleNextDocument(probe); ++documents) {
      if (documents > content.size()) {
        return file.Error(probe.last_mark(), "", "invalid YAML: unexpected token");
      }
      if (documents > 0 && probe.content().has_value()) {
        return file.Error(*probe.content(), "",
                          "more than one YAML document in a file; put each domain in its own file");
      }
      probe.Reset();
    }
    return YAML::Load(content);
  } catch (const YAML::Exception& e) {
    return file.Error(e.mark, "", absl::StrCat("invalid YAML: ", e.msg));
  }
}

absl::Status CheckExpandedSize(const FileContext& file, const YAML::Node& root,
                               size_t source_bytes) {
  const size_t max_nodes = std::max(kMaxExpandedNodes, source_bytes);
  const size_t max_scalar_bytes = std::max(kMaxExpandedScalarBytes, source_bytes);
  struct Pending {
    YAML::Node node;
    int depth;
  };
  std::vector<Pending> pending = {{root, 1}};
  size_t nodes = 0;
  size_t scalar_bytes = 0;
  while (!pending.empty()) {
    const Pending item = std::move(pending.back());
    pending.pop_back();
    if (++nodes > max_nodes) {
      return file.Error(
          item.node.Mark(), "",
          absl::StrCat("more than ", max_nodes, " YAML nodes once aliases are expanded"));
    }
    if (item.depth > kMaxNestingDepth) {
      return file.Error(item.node.Mark(), "",
                        absl::StrCat("nested more than ", kMaxNestingDepth,
                                     " levels deep (or an anchor is used inside itself)"));
    }
    if (item.node.IsScalar()) {
      scalar_bytes += item.node.Scalar().size();
      if (scalar_bytes > max_scalar_bytes) {
        return file.Error(item.node.Mark(), "",
                          absl::StrCat("more than ", max_scalar_bytes,
                                       " bytes of scalars once aliases are expanded"));
      }
    } else if (item.node.IsSequence()) {
      for (const YAML::Node& child : item.node) {
        pending.push_back({child, item.depth + 1});
      }
    } else if (item.node.IsMap()) {
      for (const auto& kv : item.node) {
        pending.push_back({kv.first, item.depth + 1});
        pending.push_back({kv.second, item.depth + 1});
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice::internal
