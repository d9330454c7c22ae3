// RedisCommand: one Redis command, formatted into RESP bytes once, when it is made, and what a
// command's sender is called back with (RedisReplyCallback).
//
// The lowest layer of the client that speaks of commands: a connection queues and writes them, a
// client and every router (redis_router.h) send them. It lives apart from redis_client.h so that
// the connection (redis_connection.h) does not include the client it is a part of.
//
// Example:
//   RedisCommand incr = RedisCommand::Format({"INCR", "hits"});
//   RedisCommand both = RedisCommand::Pipeline(...);  // written in one piece
//
// Thread safety: a move-only value; distinct commands may be used from distinct threads.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_COMMAND_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_COMMAND_H_

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "src/store/redis/client/redis_reply.h"

namespace sluice {

// Completion of one command: the reply (an error reply is a RedisReply, not a failed status) or
// a transport failure (see redis_error.h). Called exactly once.
using RedisReplyCallback = absl::AnyInvocable<void(absl::StatusOr<RedisReply>) &&>;

// RedisCommand: one command, RESP-formatted by hiredis when it is made (on the caller's thread,
// off the I/O thread). Move-only; a default-constructed or failed command is empty.
class RedisCommand {
 public:
  RedisCommand() = default;

  // RedisCommand::Format()
  //
  // Returns `argv` as a RESP array of bulk strings. Arguments are binary-safe and copied, so the
  // views need not outlive the call. Returns an empty command for an empty `argv`.
  static RedisCommand Format(std::span<const std::string_view> argv);
  static RedisCommand Format(std::initializer_list<std::string_view> argv);
  static RedisCommand Format(const std::vector<std::string>& argv);

  // RedisCommand::Pipeline()
  //
  // Returns `commands` as one command that a connection writes in one piece, so that nothing
  // another caller sends runs between them (ASKING before the command it allows; WAIT right
  // after the write it waits for). Its reply is an array holding each command's reply in order,
  // error replies included. REQUIRES: at least one command, none empty, none itself a pipeline.
  static RedisCommand Pipeline(const std::vector<RedisCommand>& commands);

  // RedisCommand::Prefixed()
  //
  // Returns a pipeline of `first` followed by `command` (every command of it, if it is a
  // pipeline), written in one piece: ASKING before a command redirected by ASK. Its reply is an
  // array of `first`'s reply and then `command`'s replies, flattened. REQUIRES: neither empty,
  // `first` not a pipeline.
  static RedisCommand Prefixed(const RedisCommand& first, const RedisCommand& command);

  // RedisCommand::Clone()
  //
  // Returns a copy of the command (its bytes are copied), for a router that may have to resend
  // it after the server proved it did not run (MOVED, ASK, TRYAGAIN).
  RedisCommand Clone() const;

  bool empty() const { return size_ == 0; }
  // The RESP bytes (of every command of a pipeline, back to back).
  std::string_view resp() const { return {data_.get(), size_}; }
  // The command name (argv[0]; of the last command of a pipeline), for errors and logs.
  std::string_view name() const;
  // How many replies the command gets: 1, or the number of commands of a pipeline.
  size_t reply_count() const { return reply_count_; }
  // True for a command made by Pipeline(): its replies are delivered as one array.
  bool is_pipeline() const { return pipeline_; }

 private:
  struct FreeDeleter {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, FreeDeleter> data_;
  size_t size_ = 0;
  size_t reply_count_ = 1;
  bool pipeline_ = false;
  // Offset in resp() of the last command, for name().
  size_t last_offset_ = 0;
};

// ValidateCommand()
//
// The one check of a command before it is sent, shared by every router (RedisClient::Send(),
// ClusterClient::Route(), SentinelClient::Route()) so that each refuses the same commands with the
// same error. Returns OK, or InvalidArgument: "redis: empty command" for an empty command (an empty
// argv, or one that could not be formatted or copied for lack of memory), and "redis <NAME>:
// timeout must be positive" for a `timeout` that is not.
absl::Status ValidateCommand(const RedisCommand& command, std::chrono::milliseconds timeout);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_COMMAND_H_
