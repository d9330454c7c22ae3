#include "src/store/redis/client/redis_reply_reader.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include <hiredis/hiredis.h>

namespace sluice {
namespace {

// Keep up to this much idle reader buffer between reads instead of freeing and reallocating it
// on every read (hiredis's default is 16 KB, less than one busy read).
constexpr size_t kReaderMaxIdleBuffer = 1 << 20;

}  // namespace

// Where the object for `task` lives: the root slot, or a new last element of the parent array, or
// nullptr when out of memory. hiredis creates an array's elements in order, each once, and element
// idx + 1 only after element idx and all its descendants are complete. Appending may move the
// array's earlier elements, but those are finished; the array itself, whose address hiredis keeps
// as its children's parent->obj, is the last element of its own parent and does not move while
// it is being filled.
RedisReply* RedisReplyReader::Slot(const redisReadTask* task) {
  if (task->parent == nullptr) return &static_cast<RedisReplyReader*>(task->privdata)->root_;
  std::vector<RedisReply>& elements = static_cast<RedisReply*>(task->parent->obj)->elements_;
  // Cannot happen with hiredis; refused rather than written out of place.
  if (static_cast<size_t>(task->idx) != elements.size()) return nullptr;
  try {
    return &elements.emplace_back();
  } catch (const std::bad_alloc&) {
    return nullptr;  // hiredis turns this into a reader error; no exception crosses C code.
  }
}

void* RedisReplyReader::CreateString(const redisReadTask* task, char* str, size_t len) {
  RedisReply::Type type = RedisReply::Type::kString;
  if (task->type == REDIS_REPLY_ERROR) type = RedisReply::Type::kError;
  if (task->type == REDIS_REPLY_STATUS) type = RedisReply::Type::kStatus;
  RedisReply* slot = Slot(task);
  if (slot == nullptr) return nullptr;
  try {
    *slot = RedisReply(type, std::string(str, len));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return slot;
}

void* RedisReplyReader::CreateArray(const redisReadTask* task, int elements) {
  if (elements > kMaxArrayElements) {
    static_cast<RedisReplyReader*>(task->privdata)->oversized_elements_ = elements;
    return nullptr;
  }
  RedisReply* slot = Slot(task);
  if (slot == nullptr) return nullptr;
  try {
    // Room for what is announced, up to a small cap: the elements may never come.
    std::vector<RedisReply> children;
    children.reserve(static_cast<size_t>(std::min(elements, kMaxReservedElements)));
    *slot = RedisReply::Array(std::move(children));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return slot;
}

void* RedisReplyReader::CreateInteger(const redisReadTask* task,
                                      long long value) {  // NOLINT(google-runtime-int)
  RedisReply* slot = Slot(task);
  if (slot == nullptr) return nullptr;
  *slot = RedisReply::Integer(value);
  return slot;
}

void* RedisReplyReader::CreateNil(const redisReadTask* task) {
  RedisReply* slot = Slot(task);
  if (slot == nullptr) return nullptr;
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
    return absl::InternalError(
        absl::StrCat("redis: protocol error: ",
                     oversized_elements_ > 0
                         ? absl::StrCat("array of ", oversized_elements_,
                                        " elements is longer than the limit of ", kMaxArrayElements)
                         : std::string(redisReaderGetError(reader_.get()))));
  }
  if (reply == nullptr) return std::nullopt;
  std::optional<RedisReply> out(std::move(root_));
  root_ = RedisReply();
  return out;
}

}  // namespace sluice
