// Fuzz target: ParseStoreUrl() and the redacted form of a StoreUrl.
//
// Input: a store URL, as given to --store or in a config file.
//
// Properties:
// - parsing never crashes and returns OK or InvalidArgument;
// - an error message never quotes the password: the password is what the user meant by it,
//   everything between the first ':' after "://" and the last '@', which is also where a password
//   with an unencoded '/', '?' or '#' ends up (ParseStoreUrl() refuses any other '@' after the
//   host, so this '@' is the one that ended the user information). The URL is parsed again with
//   every letter and digit of that password changed (within its class, so that percent escapes stay
//   escapes and numbers stay numbers); where the two messages differ, they must not differ as the
//   passwords do, which is what a message quoting any part of the password does;
// - a parsed URL's Redacted() form parses back to the same URL, with the password "***" (the
//   form is canonical and carries no secret).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fuzz/fuzz_support.h"

#include "sluice/store_url.h"

namespace sluice::fuzz {
namespace {

struct Span {
  size_t begin;
  size_t end;
};

// Where the user meant the password to be, or nullopt when the URL has none.
std::optional<Span> IntendedPassword(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  const size_t begin = scheme_end + 3;
  const size_t at = url.rfind('@');
  if (at == std::string_view::npos || at < begin) return std::nullopt;
  const size_t colon = url.substr(0, at).find(':', begin);
  if (colon == std::string_view::npos) return std::nullopt;
  return Span{colon + 1, at};
}

// Changes a letter or digit to another of its class; percent escapes stay valid ([0-9a-fA-F] map
// to themselves as a set) and so do numbers.
char Perturb(char c) {
  if (c >= '0' && c <= '9') return c == '9' ? '0' : static_cast<char>(c + 1);
  if (c >= 'a' && c <= 'f') return c == 'f' ? 'a' : static_cast<char>(c + 1);
  if (c >= 'A' && c <= 'F') return c == 'F' ? 'A' : static_cast<char>(c + 1);
  if (c >= 'g' && c <= 'z') return c == 'z' ? 'g' : static_cast<char>(c + 1);
  if (c >= 'G' && c <= 'Z') return c == 'Z' ? 'G' : static_cast<char>(c + 1);
  return c;
}

// Returns what differs between `a` and `b` once their common prefix and suffix are removed.
std::pair<std::string_view, std::string_view> Difference(std::string_view a, std::string_view b) {
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  a.remove_prefix(prefix);
  b.remove_prefix(prefix);
  size_t suffix = 0;
  while (suffix < a.size() && suffix < b.size() &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  return {a.substr(0, a.size() - suffix), b.substr(0, b.size() - suffix)};
}

void CheckErrorHidesPassword(std::string_view url, const absl::Status& error) {
  const std::optional<Span> password = IntendedPassword(url);
  if (!password.has_value()) return;
  std::string perturbed(url);
  for (size_t i = password->begin; i < password->end; ++i) perturbed[i] = Perturb(perturbed[i]);
  const absl::StatusOr<StoreUrl> other = ParseStoreUrl(perturbed);
  if (other.ok()) return;  // Different flow; nothing to compare.
  // A message may legitimately change with the password's shape (Boost says "invalid" or
  // "mismatch" depending on what it tried to parse); it leaks when what changed is password text.
  const std::string_view message(error.message().data(), error.message().size());
  const std::string_view other_message(other.status().message().data(),
                                       other.status().message().size());
  // A quoted password changes exactly as the password did: the two differences are the same
  // stretch of the two passwords. (Text that merely resembles the password, such as a password
  // containing Boost's "invalid", does not change that way.)
  const auto [mine, theirs] = Difference(message, other_message);
  const std::string_view original =
      std::string_view(url).substr(password->begin, password->end - password->begin);
  const std::string_view changed =
      std::string_view(perturbed).substr(password->begin, password->end - password->begin);
  bool leaks = false;
  if (!mine.empty() && mine.size() == theirs.size()) {
    for (size_t at = original.find(mine); at != std::string_view::npos && !leaks;
         at = original.find(mine, at + 1)) {
      leaks = changed.substr(at, theirs.size()) == theirs;
    }
  }
  SLUICE_FUZZ_CHECK(!leaks, "the error quotes the password\n  url: "
                                << Printable(url) << "\n  error: " << error
                                << "\n  with another password: " << Printable(perturbed)
                                << "\n  error: " << other.status());
}

void CheckRedactedRoundTrip(std::string_view url, const StoreUrl& parsed) {
  const std::string redacted = parsed.Redacted();
  const absl::StatusOr<StoreUrl> again = ParseStoreUrl(redacted);
  SLUICE_FUZZ_CHECK(again.ok(),
                    "Redacted() does not parse: " << again.status() << "\n  url: " << Printable(url)
                                                  << "\n  redacted: " << Printable(redacted));
  StoreUrl expected = parsed;
  if (!expected.password.empty()) expected.password = "***";
  SLUICE_FUZZ_CHECK(*again == expected,
                    "Redacted() parses to another URL\n  url: "
                        << Printable(url) << "\n  redacted: " << Printable(redacted)
                        << "\n  parses back as: " << Printable(again->Redacted()));
  (void)parsed.HostPort();
}

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<sluice::StoreUrl> parsed = sluice::ParseStoreUrl(url);
  if (!parsed.ok()) {
    SLUICE_FUZZ_CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument,
                      parsed.status());
    CheckErrorHidesPassword(url, parsed.status());
    return 0;
  }
  CheckRedactedRoundTrip(url, *parsed);
  return 0;
}
