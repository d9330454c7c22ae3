#include "src/store/redis/client/redis_command.h"

#include <cstdlib>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include <hiredis/hiredis.h>

#include "src/store/redis/client/redis_error.h"
#include "src/util/strings.h"

namespace sluice {

void RedisCommand::FreeDeleter::operator()(char* p) const { redisFreeCommand(p); }

RedisCommand RedisCommand::Format(std::span<const std::string_view> argv) {
  if (argv.empty()) return {};
  absl::InlinedVector<const char*, 16> ptrs;
  absl::InlinedVector<size_t, 16> lens;
  for (std::string_view arg : argv) {
    ptrs.push_back(arg.empty() ? "" : arg.data());
    lens.push_back(arg.size());
  }
  char* out = nullptr;
  const int len =
      redisFormatCommandArgv(&out, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  RedisCommand command;
  if (len <= 0) return command;  // Out of memory: an empty command, refused by Send().
  command.data_.reset(out);
  command.size_ = static_cast<size_t>(len);
  return command;
}

RedisCommand RedisCommand::Format(std::initializer_list<std::string_view> argv) {
  return Format(std::span<const std::string_view>(argv.begin(), argv.size()));
}

RedisCommand RedisCommand::Format(const std::vector<std::string>& argv) {
  absl::InlinedVector<std::string_view, 16> views(argv.begin(), argv.end());
  return Format(std::span<const std::string_view>(views.data(), views.size()));
}

std::string_view RedisCommand::name() const { return CommandName(resp().substr(last_offset_)); }

RedisCommand RedisCommand::Pipeline(const std::vector<RedisCommand>& commands) {
  RedisCommand out;
  size_t total = 0;
  for (const RedisCommand& c : commands) {
    if (c.empty() || c.pipeline_) return out;  // Refused by Send() as an empty command.
    total += c.size_;
  }
  if (commands.empty()) return out;
  // hiredis allocates formatted commands with malloc and frees them with redisFreeCommand(),
  // which is free(): the concatenation is allocated the same way.
  char* data = static_cast<char*>(std::malloc(total));
  if (data == nullptr) return out;
  size_t at = 0;
  for (const RedisCommand& c : commands) {
    out.last_offset_ = at;
    std::memcpy(data + at, c.data_.get(), c.size_);
    at += c.size_;
  }
  out.data_.reset(data);
  out.size_ = total;
  out.reply_count_ = commands.size();
  out.pipeline_ = true;
  return out;
}

RedisCommand RedisCommand::Prefixed(const RedisCommand& first, const RedisCommand& command) {
  RedisCommand out;
  if (first.empty() || first.pipeline_ || command.empty()) return out;
  const size_t total = first.size_ + command.size_;
  // Allocated with malloc, as hiredis allocates what redisFreeCommand() (free) releases.
  char* data = static_cast<char*>(std::malloc(total));
  if (data == nullptr) return out;
  std::memcpy(data, first.data_.get(), first.size_);
  std::memcpy(data + first.size_, command.data_.get(), command.size_);
  out.data_.reset(data);
  out.size_ = total;
  out.reply_count_ = 1 + command.reply_count_;
  out.pipeline_ = true;
  out.last_offset_ = first.size_ + command.last_offset_;
  return out;
}

RedisCommand RedisCommand::Clone() const {
  RedisCommand out;
  if (empty()) return out;
  char* data = static_cast<char*>(std::malloc(size_));
  if (data == nullptr) return out;  // Out of memory: an empty command, refused by Send().
  std::memcpy(data, data_.get(), size_);
  out.data_.reset(data);
  out.size_ = size_;
  out.reply_count_ = reply_count_;
  out.pipeline_ = pipeline_;
  out.last_offset_ = last_offset_;
  return out;
}

absl::Status ValidateCommand(const RedisCommand& command, std::chrono::milliseconds timeout) {
  if (command.empty()) return absl::InvalidArgumentError("redis: empty command");
  if (timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis ", internal::AbslView(command.name()), ": timeout must be positive"));
  }
  return absl::OkStatus();
}

}  // namespace sluice
