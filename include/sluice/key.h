// Store keys: how callers build the key of a limit, and which keys a store keeps together.
//
// A key is a string at the Store API (Store::Check() takes any bytes), built and read by one rule
// (docs/keys.md):
//
// - Components. A key made of several parts (area, route, tier, identity...) joins them with ':'
//   after writing '\' as "\\" and ':' as "\:" in each part: JoinKeyComponents(). Distinct part
//   lists never give the same key.
// - Hash tag. TaggedKey(tag, name) is "{" + tag + "}" + name, with '\' written as "\\" and '}' as
//   "\}" in the tag. All keys with one tag belong together: a sharded store keeps them on one shard
//   (one Redis Cluster slot), so a CheckAll() over them stays one atomic step. A key that does not
//   start with '{', or whose '{' is never closed by an unescaped '}', is plain: the whole key is
//   its own tag. SplitKey() reads a key back into its tag and name.
//
// Stores map a key to their own form: the memory store uses the bytes as they are; the Redis
// store writes the tag into the Redis hash tag (docs/keys.md, "Redis form").
//
// Example:
//   // Every limit of one user shares the tag, so a multi-limit check is one slot on a cluster.
//   const std::array<std::string_view, 2> parts = {"GET /orders", "burst"};
//   std::string key = TaggedKey("user:42", JoinKeyComponents(parts));
//   // key == "{user:42}GET /orders:burst"
//   KeyParts split = SplitKey(key);  // {.tag = "user:42", .name = "GET /orders:burst", .tagged}
//
// Thread safety: pure functions.
#ifndef SLUICE_KEY_H_
#define SLUICE_KEY_H_

#include <span>
#include <string>
#include <string_view>

namespace sluice {

// JoinKeyComponents()
//
// Returns `components` joined by ':', each written as EscapeKeyComponent() does, so that no two
// distinct component lists give the same key: ("a:b") and ("a", "b") differ, as do ("a", "") and
// ("a"). REQUIRES: !components.empty().
std::string JoinKeyComponents(std::span<const std::string_view> components);

// EscapeKeyComponent()
//
// Returns `component` with every '\' written as "\\" and every ':' as "\:": one component as
// JoinKeyComponents() writes it.
std::string EscapeKeyComponent(std::string_view component);

// AppendKeyComponent()
//
// Appends EscapeKeyComponent(`component`) to `out`, sized once (hot paths escape per request).
void AppendKeyComponent(std::string& out, std::string_view component);

// TaggedKey()
//
// Returns "{" + `tag` (with '\' written as "\\" and '}' as "\}") + "}" + `name`. Any bytes are
// allowed in both; SplitKey() of the result gives back the escaped tag and `name`.
std::string TaggedKey(std::string_view tag, std::string_view name);

// AppendKeyTag()
//
// Appends "{" + escaped `tag` + "}" to `out`: the start of every TaggedKey() with this tag, for
// callers that build many keys of one tag.
void AppendKeyTag(std::string& out, std::string_view tag);

// The parts of a key, as views into it.
struct KeyParts {
  // The tag in its escaped form (the bytes between the braces); for a plain key, the whole key.
  std::string_view tag{};
  // What follows the tag's closing brace; empty for a plain key.
  std::string_view name{};
  // True when the key has a tag of its own ("{...}..."); false for a plain key.
  bool tagged = false;

  friend bool operator==(const KeyParts&, const KeyParts&) = default;
};

// SplitKey()
//
// Returns the tag and name of `key`. A key that starts with '{' and has an unescaped '}' after it
// (a '\' escapes the byte after it) is tagged; any other key is plain. For every tagged key,
// key == "{" + tag + "}" + name, so the split is one-to-one.
KeyParts SplitKey(std::string_view key);
// The parts are views into the key: splitting a temporary string would leave them dangling.
KeyParts SplitKey(std::string&& key) = delete;
inline KeyParts SplitKey(const char* key) { return SplitKey(std::string_view(key)); }

// UnescapeKeyTag()
//
// Returns the tag that `escaped_tag` (KeyParts::tag of a tagged key) was written from: each '\'
// dropped and the byte after it kept. For logs and tests; stores use the escaped form.
std::string UnescapeKeyTag(std::string_view escaped_tag);

}  // namespace sluice

#endif  // SLUICE_KEY_H_
