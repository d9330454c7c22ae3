// Fuzz target: RedisReplyReader, the RESP2 parser every Redis reply goes through.
//
// Input: a byte stream as it would arrive from a Redis server (or from anything else listening on
// that port).
//
// Properties:
// - parsing never crashes, whatever the bytes, and an error is Internal "redis: protocol error";
// - differential: the stream fed at once, byte by byte, and in chunks of random sizes (seeded by
//   the input) yields the same replies in the same order and then the same error or none, so a
//   reply never depends on how TCP happened to split it;
// - round trip: the parsed replies, written back as RESP, parse to the same replies.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "fuzz/fuzz_support.h"

#include "src/store/redis/client/redis_reply.h"
#include "src/store/redis/client/redis_reply_reader.h"

namespace sluice::fuzz {
namespace {

// Byte-by-byte feeding costs one Feed() and Next() per byte; above this the stream is fed in
// chunks only.
constexpr size_t kMaxBytewiseBytes = 2048;
constexpr int kRandomSplits = 2;

struct Outcome {
  std::vector<RedisReply> replies;
  std::optional<std::string> error;
};

// Takes every reply available; returns false once the reader has failed.
bool Drain(RedisReplyReader& reader, Outcome& out) {
  while (true) {
    absl::StatusOr<std::optional<RedisReply>> next = reader.Next();
    if (!next.ok()) {
      SLUICE_FUZZ_CHECK(next.status().code() == absl::StatusCode::kInternal &&
                            absl::StartsWith(next.status().message(), "redis: protocol error"),
                        next.status());
      out.error = std::string(next.status().message());
      return false;
    }
    if (!next->has_value()) return true;
    out.replies.push_back(**std::move(next));
  }
}

// Feeds `stream` in pieces of the sizes `next_size` returns (each at least 1), draining the reader
// after each piece as RedisConnection does after each socket read.
template <typename NextSize>
Outcome ParseInPieces(std::string_view stream, NextSize next_size) {
  RedisReplyReader reader;
  Outcome out;
  while (!stream.empty()) {
    const size_t n = std::min(stream.size(), std::max<size_t>(1, next_size()));
    const absl::Status fed = reader.Feed(stream.substr(0, n));
    // Feed() fails only on a reader that has already failed, which Drain() reported and left.
    SLUICE_FUZZ_CHECK(fed.ok(), fed);
    stream.remove_prefix(n);
    if (!Drain(reader, out)) break;
  }
  return out;
}

std::string Describe(const Outcome& outcome) {
  std::string out = std::to_string(outcome.replies.size()) + " replies";
  for (size_t i = 0; i < outcome.replies.size() && i < 8; ++i) {
    out += i == 0 ? ": " : ", ";
    out += Printable(outcome.replies[i].DebugString(), 80);
  }
  out += outcome.error.has_value() ? ", then " + *outcome.error : ", no error";
  return out;
}

void CheckSame(const Outcome& expected, const Outcome& actual, std::string_view how,
               std::string_view stream) {
  SLUICE_FUZZ_CHECK(expected.replies == actual.replies && expected.error == actual.error,
                    "fed " << how << ": " << Describe(actual) << "\n  fed at once: "
                           << Describe(expected) << "\n  stream: " << Printable(stream));
}

// Writes `reply` as RESP2. Status and error texts never contain "\r\n" (the parser stops there).
void Encode(const RedisReply& reply, std::string& out) {
  switch (reply.type()) {
    case RedisReply::Type::kNil:
      out += "$-1\r\n";
      return;
    case RedisReply::Type::kString:
      out += "$" + std::to_string(reply.str().size()) + "\r\n" + reply.str() + "\r\n";
      return;
    case RedisReply::Type::kStatus:
      out += "+" + reply.str() + "\r\n";
      return;
    case RedisReply::Type::kError:
      out += "-" + reply.str() + "\r\n";
      return;
    case RedisReply::Type::kInteger:
      out += ":" + std::to_string(reply.integer()) + "\r\n";
      return;
    case RedisReply::Type::kArray:
      out += "*" + std::to_string(reply.elements().size()) + "\r\n";
      for (const RedisReply& element : reply.elements()) Encode(element, out);
      return;
  }
}

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  const std::string_view stream(reinterpret_cast<const char*>(data), size);

  const Outcome at_once = ParseInPieces(stream, [&] { return stream.size(); });
  if (stream.size() <= kMaxBytewiseBytes) {
    CheckSame(at_once, ParseInPieces(stream, [] { return size_t{1}; }), "byte by byte", stream);
  }
  Random random(HashBytes(stream));
  for (int i = 0; i < kRandomSplits; ++i) {
    // Mostly small pieces, sometimes large ones, as reads of a busy socket come.
    const size_t max_piece = random.Below(2) == 0 ? 16 : 1024;
    CheckSame(at_once, ParseInPieces(stream, [&] { return 1 + random.Below(max_piece); }),
              "in random pieces", stream);
  }

  std::string encoded;
  for (const sluice::RedisReply& reply : at_once.replies) Encode(reply, encoded);
  const Outcome again = ParseInPieces(encoded, [&] { return encoded.size(); });
  SLUICE_FUZZ_CHECK(again.replies == at_once.replies && !again.error.has_value(),
                    "re-encoded: " << Describe(again) << "\n  original: " << Describe(at_once)
                                   << "\n  stream: " << Printable(stream));
  return 0;
}
