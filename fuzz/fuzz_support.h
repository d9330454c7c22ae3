// Shared pieces of the fuzz targets: property checks, a reader that splits the fuzz input into
// typed pieces, and a deterministic random source derived from the input.
//
// Every target is one LLVMFuzzerTestOneInput() that libFuzzer drives (built with SLUICE_FUZZ) and
// that fuzz/corpus_main.cc replays over the stored corpus in the normal test build. A property
// violation prints what was found and aborts, which libFuzzer reports as a crash (and saves the
// input) and ctest as a failed test.
//
// Example:
//   FuzzInput in(data, size);
//   const std::string_view key = in.LengthPrefixed(64);
//   SLUICE_FUZZ_CHECK(Escape(key).size() >= key.size(), "escape shrank " << key.size());
//
// Thread safety: the fuzz targets are single-threaded; so is everything here.
#ifndef SLUICE_FUZZ_FUZZ_SUPPORT_H_
#define SLUICE_FUZZ_FUZZ_SUPPORT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

// SLUICE_FUZZ_CHECK(condition, detail): aborts with `detail` (anything that streams into an
// std::ostream) when `condition` is false. Active in every build type: it is the oracle.
#define SLUICE_FUZZ_CHECK(condition, detail)                                          \
  do {                                                                                \
    if (!(condition)) {                                                               \
      std::ostringstream sluice_fuzz_detail;                                          \
      sluice_fuzz_detail << detail; /* NOLINT(bugprone-macro-parentheses) */          \
      ::sluice::fuzz::Fail(__FILE__, __LINE__, #condition, sluice_fuzz_detail.str()); \
    }                                                                                 \
  } while (false)

namespace sluice::fuzz {

[[noreturn]] inline void Fail(const char* file, int line, const char* condition,
                              const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n  %s\n", file, line, condition,
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// Returns `bytes` with every byte outside printable ASCII written as \xNN, for messages.
inline std::string Printable(std::string_view bytes, size_t max_bytes = 300) {
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, max_bytes)) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  if (bytes.size() > max_bytes) out += "...";
  return out;
}

// Consumes the fuzz input front to back. Reads past the end yield zeros and empty strings, so a
// target never has to check for exhaustion: every input, however short, is a valid test.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return rest_.empty(); }
  size_t remaining() const { return rest_.size(); }

  // Returns the next byte, or 0 when the input is exhausted.
  uint8_t Byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }

  // Returns up to `n` bytes.
  std::string_view Bytes(size_t n) {
    const std::string_view out = rest_.substr(0, std::min(n, rest_.size()));
    rest_.remove_prefix(out.size());
    return out;
  }

  // Returns a string whose length is the next byte, modulo `max_bytes + 1`.
  std::string_view LengthPrefixed(size_t max_bytes) { return Bytes(Byte() % (max_bytes + 1)); }

  // Returns everything not consumed yet.
  std::string_view Rest() { return Bytes(rest_.size()); }

 private:
  std::string_view rest_;
};

// FNV-1a, to seed choices that must depend on the input but not consume it.
inline uint64_t HashBytes(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

// SplitMix64: a small deterministic generator, so that a saved crash input replays exactly.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Returns a value in [0, n). REQUIRES: n > 0.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

}  // namespace sluice::fuzz

#endif  // SLUICE_FUZZ_FUZZ_SUPPORT_H_
