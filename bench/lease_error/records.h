// RecordFile: the decisions of one worker process, in a file both the worker and the parent map
// (MAP_SHARED), so that what a worker recorded survives its being killed (SIGKILL) mid-run.
//
// The parent creates the file with room for `capacity` records; the worker appends one Record per
// decision (from any thread) and fills the summary at the end; the parent reads both after the
// worker has exited. A record is complete once its kValid flag is set (it is written last), so a
// record torn by a kill is skipped.
//
// Example:
//   absl::StatusOr<RecordFile> file = RecordFile::Create("/tmp/w0.rec", 100'000);   // parent
//   absl::StatusOr<RecordFile> mine = RecordFile::Open("/tmp/w0.rec");              // worker
//   mine->Append({.send_us = s, .recv_us = r, .flags = Record::kAllowed});
//
// Thread safety: Append() and the summary's atomics may be used from any thread and process.
#ifndef SLUICE_BENCH_LEASE_ERROR_RECORDS_H_
#define SLUICE_BENCH_LEASE_ERROR_RECORDS_H_

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace sluice::lease_error {

// One decision, as the worker saw it. Times are CLOCK_REALTIME microseconds (the clock Redis's
// TIME reads on the same host).
struct Record {
  static constexpr uint32_t kValid = 1;
  static constexpr uint32_t kAllowed = 2;
  static constexpr uint32_t kError = 4;
  static constexpr uint32_t kFallback = 8;

  int64_t send_us = 0;         // when the check was issued
  int64_t recv_us = 0;         // when its answer arrived
  int64_t reset_after_us = 0;  // the decision's reset_after (names the window of a window limit)
  uint32_t flags = 0;
  uint32_t instance = 0;
};

// What a worker reports besides its decisions.
struct WorkerSummary {
  std::atomic<uint64_t> next{0};        // records handed out (may exceed the capacity)
  std::atomic<int64_t> shed{0};         // arrivals not offered: `inflight` checks were pending
  std::atomic<int64_t> late{0};         // arrivals offered more than 2 ms after their time
  std::atomic<int64_t> max_late_us{0};  // the latest of them
  std::atomic<int64_t> unfinished{0};   // checks still pending when the worker gave up waiting
  std::atomic<uint32_t> finished{0};    // 1 once the worker stopped on its own
  // Lease mode, sampled every few ms (a killed worker's last sample is what it stranded): units
  // held (granted, less spent, ended and given back) and the size of the latest grant; -1: none.
  std::atomic<int64_t> lease_held{-1};
  std::atomic<int64_t> lease_last_grant{-1};
  std::atomic<int64_t> lease_sampled_us{0};  // when (CLOCK_REALTIME us)
};

class RecordFile {
 public:
  // RecordFile::Create()
  //
  // Creates (or truncates) `path` with room for `capacity` records and maps it.
  static absl::StatusOr<RecordFile> Create(const std::string& path, uint64_t capacity);

  // RecordFile::Open()
  //
  // Maps an existing file made by Create(); InvalidArgument when it is not one.
  static absl::StatusOr<RecordFile> Open(const std::string& path);

  RecordFile(RecordFile&& other) noexcept;
  RecordFile& operator=(RecordFile&& other) noexcept;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  ~RecordFile();

  // RecordFile::Append()
  //
  // Stores `record` (kValid added) and returns true; false when the file is full.
  bool Append(Record record);

  WorkerSummary& summary() { return header_->summary; }

  // RecordFile::Records()
  //
  // The records written so far (some may lack kValid: torn by a kill).
  std::span<const Record> Records() const;

 private:
  struct Header {
    uint64_t magic;
    uint64_t capacity;
    WorkerSummary summary;
  };

  RecordFile(void* base, size_t bytes);
  Record* records() const;

  void* base_ = nullptr;
  size_t bytes_ = 0;
  Header* header_ = nullptr;
};

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_RECORDS_H_
