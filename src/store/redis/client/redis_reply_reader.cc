#include "src/store/redis/client/redis_reply_reader.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <optional>
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

// The type of the item hiredis is reading, or -1 between replies and before an item's type byte.
// hiredis 1.x keeps its task stack behind pointers, 0.14 inline; both are in its public header.
int CurrentItemType(const redisReader& r) {
  if (r.ridx < 0) return -1;
#if HIREDIS_MAJOR >= 1
  return r.task[r.ridx]->type;
#else
  return r.rstack[r.ridx].type;
#endif
}

// The length announced by a bulk string whose "$<length>\r\n" header is at `header` (just after
// the '$'), or nullopt while the header is incomplete or not a number (hiredis reports that).
std::optional<uint64_t> AnnouncedLength(std::string_view header) {
  uint64_t length = 0;
  for (size_t i = 0; i < header.size() && i < 21; ++i) {
    const char c = header[i];
    if (c == '\r') return i == 0 ? std::nullopt : std::optional<uint64_t>(length);
    if (c < '0' || c > '9') return std::nullopt;  // "-1" (nil) or garbage: hiredis decides.
    if (length > (UINT64_MAX - 9) / 10) return UINT64_MAX;
    length = length * 10 + static_cast<uint64_t>(c - '0');
  }
  return std::nullopt;
}

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

bool RedisReplyReader::Charge(size_t bytes) {
  built_bytes_ += bytes;
  if (built_bytes_ <= limits_.max_reply_bytes) return true;
  if (cap_error_.empty()) {
    cap_error_ = absl::StrCat("reply larger than the limit of ", limits_.max_reply_bytes, " bytes");
  }
  return false;
}

void* RedisReplyReader::CreateString(const redisReadTask* task, char* str, size_t len) {
  RedisReply::Type type = RedisReply::Type::kString;
  if (task->type == REDIS_REPLY_ERROR) type = RedisReply::Type::kError;
  if (task->type == REDIS_REPLY_STATUS) type = RedisReply::Type::kStatus;
  auto* self = static_cast<RedisReplyReader*>(task->privdata);
  // CheckPendingReply() refuses a long bulk string before it is buffered; this catches the rest.
  if (!self->Charge(sizeof(RedisReply) + len)) return nullptr;
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
  auto* self = static_cast<RedisReplyReader*>(task->privdata);
  const size_t reserved = static_cast<size_t>(std::clamp(elements, 0, kMaxReservedElements));
  if (!self->Charge(sizeof(RedisReply) * (1 + reserved))) return nullptr;
  RedisReply* slot = Slot(task);
  if (slot == nullptr) return nullptr;
  try {
    // Room for what is announced, up to a small cap: the elements may never come.
    std::vector<RedisReply> children;
    children.reserve(reserved);
    *slot = RedisReply::Array(std::move(children));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return slot;
}

void* RedisReplyReader::CreateInteger(const redisReadTask* task,
                                      long long value) {  // NOLINT(google-runtime-int)
  if (!static_cast<RedisReplyReader*>(task->privdata)->Charge(sizeof(RedisReply))) return nullptr;
  RedisReply* slot = Slot(task);
  if (slot == nullptr) return nullptr;
  *slot = RedisReply::Integer(value);
  return slot;
}

void* RedisReplyReader::CreateNil(const redisReadTask* task) {
  if (!static_cast<RedisReplyReader*>(task->privdata)->Charge(sizeof(RedisReply))) return nullptr;
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

RedisReplyReader::RedisReplyReader(const RedisReplyLimits& limits) : limits_(limits) {
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

bool RedisReplyReader::mid_reply() const {
  // hiredis leaves ridx at 0 with no type after looking for a reply in an empty buffer.
  return reader_->len > reader_->pos || reader_->ridx > 0 || CurrentItemType(*reader_) >= 0;
}

size_t RedisReplyReader::pending_bytes() const {
  return built_bytes_ + (reader_->len - reader_->pos);
}

void RedisReplyReader::CheckPendingReply() {
  const redisReader& r = *reader_;
  const std::string_view unparsed(r.buf + r.pos, r.len - r.pos);
  const int type = CurrentItemType(r);
  if (type == REDIS_REPLY_STRING) {
    // hiredis has read the '$' and waits for the whole "<length>\r\n<bytes>\r\n" to arrive.
    const std::optional<uint64_t> length = AnnouncedLength(unparsed);
    if (length.has_value() && *length > limits_.max_bulk_bytes) {
      cap_error_ = absl::StrCat("bulk string of ", *length, " bytes is longer than the limit of ",
                                limits_.max_bulk_bytes);
      return;
    }
  } else if (type != -1 && type != REDIS_REPLY_ARRAY && unparsed.size() > limits_.max_bulk_bytes) {
    // A status, error or integer line still without its "\r\n".
    cap_error_ =
        absl::StrCat("line of more than ", limits_.max_bulk_bytes, " bytes without an end");
    return;
  }
  if (built_bytes_ + unparsed.size() > limits_.max_reply_bytes) {
    cap_error_ = absl::StrCat("reply larger than the limit of ", limits_.max_reply_bytes,
                              " bytes (", built_bytes_ + unparsed.size(), " so far)");
  }
}

absl::StatusOr<std::optional<RedisReply>> RedisReplyReader::Next() {
  void* reply = nullptr;
  if (cap_error_.empty() && redisReaderGetReply(reader_.get(), &reply) == REDIS_OK &&
      reply == nullptr) {
    CheckPendingReply();
  }
  if (!cap_error_.empty()) {
    // Sticky, as hiredis's own errors are: the stream cannot be resynchronised.
    reader_->err = REDIS_ERR_PROTOCOL;
    return absl::InternalError(absl::StrCat("redis: protocol error: ", cap_error_));
  }
  if (reader_->err != 0) {
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
  built_bytes_ = 0;
  return out;
}

}  // namespace sluice
