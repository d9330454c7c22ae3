// RedisReplyReader: RESP2 bytes in, RedisReply values out, parsed by hiredis's redisReader.
//
// hiredis does the parsing; its object callbacks build our RedisReply tree directly, in place, so
// no redisReply is allocated and copied: a reply costs its strings and arrays and nothing more.
// Feed whatever arrived from the socket, then call Next() until it returns nullopt.
//
// Example:
//   RedisReplyReader reader;
//   SLUICE_RETURN_IF_ERROR(reader.Feed(bytes));
//   while (true) {
//     SLUICE_ASSIGN_OR_RETURN(std::optional<RedisReply> reply, reader.Next());
//     if (!reply) break;
//     Use(*std::move(reply));
//   }
//
// Thread safety: not thread-safe; one reader per connection.
#ifndef SLUICE_STORE_REDIS_REDIS_REPLY_READER_H_
#define SLUICE_STORE_REDIS_REDIS_REPLY_READER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/redis_reply.h"

struct redisReader;
struct redisReadTask;

namespace sluice {

class RedisReplyReader {
 public:
  // Arrays longer than this are refused as a protocol error rather than allocated: a limiter never
  // reads large collections, and a corrupt length must not exhaust memory.
  static constexpr long long kMaxArrayElements = 1 << 20;

  RedisReplyReader();
  RedisReplyReader(const RedisReplyReader&) = delete;
  RedisReplyReader& operator=(const RedisReplyReader&) = delete;
  ~RedisReplyReader();

  // RedisReplyReader::Feed()
  //
  // Appends `bytes` to the unparsed input. Returns Internal once the reader has failed.
  absl::Status Feed(std::string_view bytes);

  // RedisReplyReader::Next()
  //
  // Returns the next complete reply, nullopt when more input is needed, or Internal on a protocol
  // error ("redis: protocol error: ..."), after which the reader (and its connection) is unusable.
  absl::StatusOr<std::optional<RedisReply>> Next();

 private:
  struct ReaderDeleter {
    void operator()(redisReader* reader) const;
  };

  // hiredis object callbacks (redisReplyObjectFunctions); each returns the RedisReply it filled.
  static RedisReply* Slot(const redisReadTask* task);
  static void* CreateString(const redisReadTask* task, char* str, size_t len);
  static void* CreateArray(const redisReadTask* task, int elements);
  static void* CreateInteger(const redisReadTask* task,
                             long long value);  // NOLINT(google-runtime-int)
  static void* CreateNil(const redisReadTask* task);
  static void FreeObject(void* reply);

  // The reply under construction; hiredis callbacks write into it (see redis_reply_reader.cc).
  RedisReply root_;
  // Set when an array was refused for its length, to explain hiredis's "Out of memory".
  bool oversized_ = false;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_REDIS_REPLY_READER_H_
