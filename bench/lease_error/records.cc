#include "bench/lease_error/records.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice::lease_error {
namespace {

constexpr uint64_t kMagic = 0x6c65617365657272ULL;  // "leaseerr"
constexpr size_t kHeaderBytes = 256;                // the records start here, aligned

absl::StatusOr<void*> MapFile(int fd, size_t bytes, const std::string& path) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("mmap ", path, ": ", std::strerror(errno)));
  }
  return base;
}

}  // namespace

absl::StatusOr<RecordFile> RecordFile::Create(const std::string& path, uint64_t capacity) {
  static_assert(sizeof(Header) <= kHeaderBytes);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  const size_t bytes = kHeaderBytes + capacity * sizeof(Record);
  // A sparse file: only the pages written take space.
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return absl::InternalError(absl::StrCat("ftruncate ", path, ": ", std::strerror(errno)));
  }
  absl::StatusOr<void*> base = MapFile(fd, bytes, path);
  if (!base.ok()) return base.status();
  auto* header = new (*base) Header{.magic = kMagic, .capacity = capacity, .summary = {}};
  (void)header;
  return RecordFile(*base, bytes);
}

absl::StatusOr<RecordFile> RecordFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < kHeaderBytes) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a record file"));
  }
  const auto bytes = static_cast<size_t>(st.st_size);
  absl::StatusOr<void*> base = MapFile(fd, bytes, path);
  if (!base.ok()) return base.status();
  RecordFile file(*base, bytes);
  if (file.header_->magic != kMagic ||
      kHeaderBytes + file.header_->capacity * sizeof(Record) > bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a record file"));
  }
  return file;
}

RecordFile::RecordFile(void* base, size_t bytes)
    : base_(base), bytes_(bytes), header_(static_cast<Header*>(base)) {}

RecordFile::RecordFile(RecordFile&& other) noexcept
    : base_(other.base_), bytes_(other.bytes_), header_(other.header_) {
  other.base_ = nullptr;
  other.header_ = nullptr;
}

RecordFile& RecordFile::operator=(RecordFile&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, bytes_);
    base_ = other.base_;
    bytes_ = other.bytes_;
    header_ = other.header_;
    other.base_ = nullptr;
    other.header_ = nullptr;
  }
  return *this;
}

RecordFile::~RecordFile() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

Record* RecordFile::records() const {
  return reinterpret_cast<Record*>(static_cast<char*>(base_) + kHeaderBytes);
}

bool RecordFile::Append(Record record) {
  const uint64_t slot = header_->summary.next.fetch_add(1, std::memory_order_relaxed);
  if (slot >= header_->capacity) return false;
  Record& out = records()[slot];
  const uint32_t flags = record.flags | Record::kValid;
  record.flags = 0;
  out = record;
  // The valid flag last: a record torn by a kill is skipped.
  std::atomic_ref<uint32_t>(out.flags).store(flags, std::memory_order_release);
  return true;
}

std::span<const Record> RecordFile::Records() const {
  const uint64_t n =
      std::min(header_->summary.next.load(std::memory_order_acquire), header_->capacity);
  return {records(), static_cast<size_t>(n)};
}

}  // namespace sluice::lease_error
