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
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_REPLY_READER_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_REPLY_READER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_reply.h"

struct redisReader;
struct redisReadTask;

namespace sluice {

class RedisReplyReader {
 public:
  // Arrays longer than this are refused as a protocol error. The longest reply sluice reads is
  // check_all's, 1 + 5 * 64 checks = 321 integers (src/lua/check_all_entry.lua); 2^16 leaves two
  // orders of magnitude for ad-hoc commands (KEYS or a SCAN batch in tests) and keeps one array
  // under 5 MB (sizeof(RedisReply) is 72 bytes), should a garbled or hostile peer fill it.
  static constexpr int kMaxArrayElements = 1 << 16;
  // An array reserves room for at most this many elements when its length arrives and grows as
  // its elements do, so memory follows the bytes received, not the lengths announced: the eight
  // bytes "*65536\r\n" cost no more than "*512\r\n". 512 holds check_all's 321 in one allocation.
  static constexpr int kMaxReservedElements = 512;

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
  // The length of an array refused for it (0 if none), to explain hiredis's "Out of memory".
  int oversized_elements_ = 0;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_REPLY_READER_H_
