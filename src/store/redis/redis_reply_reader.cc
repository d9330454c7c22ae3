#include "src/store/redis/redis_reply_reader.h"

#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include <hiredis/hiredis.h>

namespace sluice {
namespace {

// Keep up to this much idle reader buffer between reads instead of freeing and reallocating it
// on every read (hiredis's default is 16 KB, less than one busy read).
constexpr size_t kReaderMaxIdleBuffer = 1 << 20;

}  // namespace

// Where the object for `task` lives: the root slot, or its element of the parent array, which
// CreateArray sized up front so that element addresses stay stable while children are built.
RedisReply* RedisReplyReader::Slot(const redisReadTask* task) {
  if (task->parent == nullptr) return &static_cast<RedisReplyReader*>(task->privdata)->root_;
  auto* parent = static_cast<RedisReply*>(task->parent->obj);
  return &parent->elements_[static_cast<size_t>(task->idx)];
}

void* RedisReplyReader::CreateString(const redisReadTask* task, char* str, size_t len) {
  RedisReply::Type type = RedisReply::Type::kString;
  if (task->type == REDIS_REPLY_ERROR) type = RedisReply::Type::kError;
  if (task->type == REDIS_REPLY_STATUS) type = RedisReply::Type::kStatus;
  RedisReply* slot = Slot(task);
  try {
    *slot = RedisReply(type, std::string(str, len));
  } catch (const std::bad_alloc&) {
    return nullptr;  // hiredis turns this into a reader error; no exception crosses C code.
  }
  return slot;
}

void* RedisReplyReader::CreateArray(const redisReadTask* task, int elements) {
  if (elements > kMaxArrayElements) {
    static_cast<RedisReplyReader*>(task->privdata)->oversized_ = true;
    return nullptr;
  }
  RedisReply* slot = Slot(task);
  try {
    *slot = RedisReply::Array(std::vector<RedisReply>(static_cast<size_t>(elements)));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return slot;
}

void* RedisReplyReader::CreateInteger(const redisReadTask* task,
                                      long long value) {  // NOLINT(google-runtime-int)
  RedisReply* slot = Slot(task);
  *slot = RedisReply::Integer(value);
  return slot;
}

void* RedisReplyReader::CreateNil(const redisReadTask* task) {
  RedisReply* slot = Slot(task);
  *slot = RedisReply();
  return slot;
}

// hiredis frees only the root, after an error or when the reader is destroyed mid-reply.
void RedisReplyReader::FreeObject(void* reply) { *static_cast<RedisReply*>(reply) = RedisReply(); }

void RedisReplyReader::ReaderDeleter::operator()(redisReader* reader) const {
  redisReaderFree(reader);
}

RedisReplyReader::RedisReplyReader() {
  static redisReplyObjectFunctions functions = {
      .createString = &CreateString,
      .createArray = &CreateArray,
      .createInteger = &CreateInteger,
      .createNil = &CreateNil,
      .freeObject = &FreeObject,
  };
  reader_.reset(redisReaderCreateWithFunctions(&functions));
  if (reader_ == nullptr) throw std::bad_alloc();
  reader_->maxbuf = kReaderMaxIdleBuffer;
  reader_->privdata = this;  // hiredis copies it into every read task.
}

RedisReplyReader::~RedisReplyReader() = default;

absl::Status RedisReplyReader::Feed(std::string_view bytes) {
  if (redisReaderFeed(reader_.get(), bytes.data(), bytes.size()) != REDIS_OK) {
    return absl::InternalError(
        absl::StrCat("redis: protocol error: ", redisReaderGetError(reader_.get())));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<RedisReply>> RedisReplyReader::Next() {
  void* reply = nullptr;
  if (redisReaderGetReply(reader_.get(), &reply) != REDIS_OK) {
    return absl::InternalError(absl::StrCat(
        "redis: protocol error: ",
        oversized_ ? "array longer than the limit of " + std::to_string(kMaxArrayElements)
                   : std::string(redisReaderGetError(reader_.get()))));
  }
  if (reply == nullptr) return std::nullopt;
  std::optional<RedisReply> out(std::move(root_));
  root_ = RedisReply();
  return out;
}

}  // namespace sluice
