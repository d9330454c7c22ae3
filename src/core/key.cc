#include "sluice/key.h"

#include <string>
#include <string_view>

namespace sluice {
namespace {

// Appends `bytes` with a '\' before each '\' and each `special`, sized once and written through a
// pointer: the middleware escapes per request.
void AppendEscaped(std::string& out, std::string_view bytes, char special) {
  const size_t start = out.size();
  out.resize(start + 2 * bytes.size());
  char* p = out.data() + start;
  for (const char c : bytes) {
    if (c == '\\' || c == special) *p++ = '\\';
    *p++ = c;
  }
  out.resize(static_cast<size_t>(p - out.data()));
}

}  // namespace

std::string JoinKeyComponents(std::span<const std::string_view> components) {
  size_t size = components.size();
  for (std::string_view c : components) size += c.size();
  std::string out;
  out.reserve(size);
  for (size_t i = 0; i < components.size(); ++i) {
    if (i > 0) out.push_back(':');
    AppendEscaped(out, components[i], ':');
  }
  return out;
}

void AppendKeyComponent(std::string& out, std::string_view component) {
  AppendEscaped(out, component, ':');
}

std::string EscapeKeyComponent(std::string_view component) {
  std::string out;
  AppendEscaped(out, component, ':');
  return out;
}

void AppendKeyTag(std::string& out, std::string_view tag) {
  out.push_back('{');
  AppendEscaped(out, tag, '}');
  out.push_back('}');
}

std::string TaggedKey(std::string_view tag, std::string_view name) {
  std::string out;
  out.reserve(tag.size() + name.size() + 2);
  AppendKeyTag(out, tag);
  out.append(name);
  return out;
}

KeyParts SplitKey(std::string_view key) {
  if (key.starts_with('{')) {
    // The tag ends at the first '}' not escaped by a '\'. TaggedKey() escapes every '}' and '\'
    // of a tag, so this finds its own closing brace; any other key either parses the same way
    // (and then key == "{" + tag + "}" + name still holds) or has no closing brace and is plain.
    for (size_t i = 1; i < key.size(); ++i) {
      if (key[i] == '\\') {
        ++i;  // the escaped byte, whatever it is
      } else if (key[i] == '}') {
        return KeyParts{.tag = key.substr(1, i - 1), .name = key.substr(i + 1), .tagged = true};
      }
    }
  }
  return KeyParts{.tag = key, .name = {}, .tagged = false};
}

std::string UnescapeKeyTag(std::string_view escaped_tag) {
  std::string out;
  out.reserve(escaped_tag.size());
  for (size_t i = 0; i < escaped_tag.size(); ++i) {
    if (escaped_tag[i] == '\\' && i + 1 < escaped_tag.size()) ++i;
    out.push_back(escaped_tag[i]);
  }
  return out;
}

}  // namespace sluice
