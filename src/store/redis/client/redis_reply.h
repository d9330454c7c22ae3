// RedisReply: one owned, typed RESP2 reply.
//
// Built once from the wire by RedisReplyReader (no hiredis object survives parsing). A Redis error
// reply ("-NOSCRIPT No matching script") is a value of type kError, not an absl::Status: the caller
// decides what it means (redis_error.h classifies it). Transport failures never produce a reply;
// they arrive as an absl::Status instead.
//
// Example:
//   absl::StatusOr<int64_t> n = reply.AsInteger();       // Internal unless an integer
//   if (reply.is_error() && IsNoScript(reply)) { ... }
//
// Thread safety: a value type.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_REPLY_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_REPLY_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice {

class RedisReply {
 public:
  enum class Type : uint8_t { kNil, kString, kStatus, kInteger, kArray, kError };

  // A nil reply.
  RedisReply() = default;

  static RedisReply Nil() { return {}; }
  static RedisReply String(std::string s) { return {Type::kString, std::move(s)}; }
  static RedisReply Status(std::string s) { return {Type::kStatus, std::move(s)}; }
  static RedisReply Error(std::string s) { return {Type::kError, std::move(s)}; }
  static RedisReply Integer(int64_t value);
  static RedisReply Array(std::vector<RedisReply> elements);

  Type type() const { return type_; }
  bool is_nil() const { return type_ == Type::kNil; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_status() const { return type_ == Type::kStatus; }
  bool is_integer() const { return type_ == Type::kInteger; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_error() const { return type_ == Type::kError; }

  // The text of a string, status or error reply; empty for other types.
  const std::string& str() const { return str_; }
  // The value of an integer reply; 0 for other types.
  int64_t integer() const { return integer_; }
  // The elements of an array reply; empty for other types.
  const std::vector<RedisReply>& elements() const { return elements_; }
  std::vector<RedisReply>& mutable_elements() { return elements_; }

  // RedisReply::AsInteger()
  //
  // Returns the integer, or Internal ("redis reply: expected integer, got error: ERR ...").
  absl::StatusOr<int64_t> AsInteger() const;

  // RedisReply::AsString()
  //
  // Returns the text of a string or status reply, or Internal.
  absl::StatusOr<std::string_view> AsString() const;

  // RedisReply::AsArray()
  //
  // Returns the elements of an array reply, or Internal.
  absl::StatusOr<std::span<const RedisReply>> AsArray() const;

  // RedisReply::DebugString()
  //
  // Returns a short rendering for tests and logs: "nil", "42", "\"text\"", "+OK", "-ERR x",
  // "[1, \"a\"]". Long strings are truncated.
  std::string DebugString() const;

  friend bool operator==(const RedisReply&, const RedisReply&) = default;

 private:
  friend class RedisReplyReader;  // Builds replies in place.

  RedisReply(Type type, std::string s) : type_(type), str_(std::move(s)) {}

  Type type_ = Type::kNil;
  int64_t integer_ = 0;
  std::string str_;
  std::vector<RedisReply> elements_;
};

// RedisReplyTypeName()
//
// Returns "nil", "string", "status", "integer", "array" or "error".
std::string_view RedisReplyTypeName(RedisReply::Type type);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_REPLY_H_
