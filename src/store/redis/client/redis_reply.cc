#include "src/store/redis/client/redis_reply.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;

constexpr size_t kDebugStringMax = 64;

absl::Status WrongType(std::string_view expected, const RedisReply& reply) {
  return absl::InternalError(absl::StrCat("redis reply: expected ", AbslView(expected), ", got ",
                                          AbslView(RedisReplyTypeName(reply.type())),
                                          reply.is_error() ? ": " : "",
                                          reply.is_error() ? reply.str() : ""));
}

std::string Truncated(std::string_view s) {
  if (s.size() <= kDebugStringMax) return std::string(s);
  return absl::StrCat(AbslView(s.substr(0, kDebugStringMax)), "...(", s.size(), " bytes)");
}

}  // namespace

RedisReply RedisReply::Integer(int64_t value) {
  RedisReply reply;
  reply.type_ = Type::kInteger;
  reply.integer_ = value;
  return reply;
}

RedisReply RedisReply::Array(std::vector<RedisReply> elements) {
  RedisReply reply;
  reply.type_ = Type::kArray;
  reply.elements_ = std::move(elements);
  return reply;
}

absl::StatusOr<int64_t> RedisReply::AsInteger() const {
  if (!is_integer()) return WrongType("integer", *this);
  return integer_;
}

absl::StatusOr<std::string_view> RedisReply::AsString() const {
  if (!is_string() && !is_status()) return WrongType("string", *this);
  return std::string_view(str_);
}

absl::StatusOr<std::span<const RedisReply>> RedisReply::AsArray() const {
  if (!is_array()) return WrongType("array", *this);
  return std::span<const RedisReply>(elements_);
}

std::string RedisReply::DebugString() const {
  switch (type_) {
    case Type::kNil:
      return "nil";
    case Type::kString:
      return absl::StrCat("\"", Truncated(str_), "\"");
    case Type::kStatus:
      return absl::StrCat("+", Truncated(str_));
    case Type::kError:
      return absl::StrCat("-", Truncated(str_));
    case Type::kInteger:
      return absl::StrCat(integer_);
    case Type::kArray:
      return absl::StrCat("[",
                          absl::StrJoin(elements_, ", ",
                                        [](std::string* out, const RedisReply& r) {
                                          out->append(r.DebugString());
                                        }),
                          "]");
  }
  return "?";
}

std::string_view RedisReplyTypeName(RedisReply::Type type) {
  switch (type) {
    case RedisReply::Type::kNil:
      return "nil";
    case RedisReply::Type::kString:
      return "string";
    case RedisReply::Type::kStatus:
      return "status";
    case RedisReply::Type::kInteger:
      return "integer";
    case RedisReply::Type::kArray:
      return "array";
    case RedisReply::Type::kError:
      return "error";
  }
  return "unknown";
}

}  // namespace sluice
