// RedisReplyReader: RESP2 bytes in, RedisReply values out, parsed by hiredis's redisReader.
//
// hiredis does the parsing; its object callbacks build our RedisReply tree directly, in place, so
// no redisReply is allocated and copied: a reply costs its strings and arrays and nothing more.
// Feed whatever arrived from the socket, then call Next() until it returns nullopt.
//
// A peer cannot make the reader hold more than the caps of RedisReplyLimits (plus one Feed()):
// hiredis buffers a bulk string until all of it has arrived, so a garbled or hostile server that
// announces "$3000000000" would otherwise be buffered to 3 GB. Each time Next() runs out of input
// it checks the reply in progress: its announced bulk length against max_bulk_bytes, and the
// bytes it has buffered and built so far against max_reply_bytes. Arrays are capped at
// kMaxArrayElements and nesting at 7 levels (hiredis's own limit).
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
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_reply.h"

struct redisReader;
struct redisReadTask;

namespace sluice {

// Caps on what one reply may hold. Defaults are far above anything sluice reads (its longest
// reply, check_all's, is a few KB), so only a broken or hostile peer meets them; a reply over a
// cap is a protocol error, which fails the connection.
struct RedisReplyLimits {
  // Longest bulk string, in bytes (Redis's own proto-max-bulk-len defaults to 512 MB). Also bounds
  // a status, error or integer line. Default: 64 MiB.
  size_t max_bulk_bytes = size_t{64} << 20;
  // Largest reply, in bytes: its strings plus sizeof(RedisReply) per element, and the input
  // buffered for the part not parsed yet. Default: 256 MiB.
  size_t max_reply_bytes = size_t{256} << 20;
};

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

  explicit RedisReplyReader(const RedisReplyLimits& limits = {});
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
  // A reply over a cap of RedisReplyLimits is such an error ("bulk string of 3000000000 bytes is
  // longer than the limit of 67108864").
  absl::StatusOr<std::optional<RedisReply>> Next();

  // RedisReplyReader::mid_reply()
  //
  // Whether part of a reply has arrived and the rest has not.
  bool mid_reply() const;

  // RedisReplyReader::pending_bytes()
  //
  // Bytes the reply in progress holds: what it has built plus its input not parsed yet.
  size_t pending_bytes() const;

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

  // Counts `bytes` against max_reply_bytes; false (and the error noted) once over it.
  bool Charge(size_t bytes);
  // Checks the reply in progress against the caps once input ran out; sets cap_error_.
  void CheckPendingReply();

  // The reply under construction; hiredis callbacks write into it (see redis_reply_reader.cc).
  RedisReply root_;
  const RedisReplyLimits limits_;
  // The length of an array refused for it (0 if none), to explain hiredis's "Out of memory".
  int oversized_elements_ = 0;
  // Bytes built into root_ so far for the reply in progress.
  size_t built_bytes_ = 0;
  // Why a cap refused the reply in progress, when one did; the reader is then failed.
  std::string cap_error_;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
};

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_REPLY_READER_H_
