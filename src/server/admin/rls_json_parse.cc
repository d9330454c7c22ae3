// The /json request parser (see rls_json.h).
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "boost/json/basic_parser_impl.hpp"
#include "envoy/type/v3/ratelimit_unit.pb.h"
#include <google/protobuf/util/json_util.h>

#include "src/server/admin/rls_json.h"
#include "src/util/strings.h"

namespace sluice::internal {
namespace {

using server::RateLimitRequest;
using Descriptor = envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
using JsonView = boost::json::string_view;

std::string_view View(JsonView s) { return {s.data(), s.size()}; }

// Returns the value of `text` when it is a canonical decimal integer (digits only, no sign, no
// leading zero, no exponent) no larger than `max`; protobuf reads such a literal the same way
// whether it came as a JSON number or, for 64-bit fields, as a JSON string.
bool CanonicalUnsigned(std::string_view text, uint64_t max, uint64_t* value) {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0')) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size() && *value <= max;
}

// Parsing: a Boost.JSON SAX handler that fills a RateLimitRequest.
//
// Every callback either extends the message along the one shape it knows or gives up (returns
// false). Giving up is never an answer, only "ask protobuf": so the handler need not know what
// protobuf would do with an input it gives up on, only what it does with the inputs it accepts.
// Those are: objects with known keys, each at most once (in either spelling); strings for string
// fields; exact names for the enum; canonical unsigned integer literals in range (and canonical
// decimal strings for the UInt64Value wrapper, the form MessageToJsonString writes). Everything
// else gives up: null, booleans, any other number form (sign, fraction, exponent, too large),
// numeric enums, strings for integers elsewhere, unknown or repeated keys, and anything
// Boost.JSON itself rejects (protobuf's parser is laxer: single quotes, bare keys, ...).

// The innermost open JSON container.
enum class Where : uint8_t {
  kStart,        // before the document
  kRequest,      // the RateLimitRequest object
  kDescriptors,  // its descriptors array
  kDescriptor,   // one RateLimitDescriptor object
  kEntries,      // its entries array
  kEntry,        // one Entry object
  kLimit,        // a RateLimitOverride object
  kEnd,          // after the document
};
constexpr size_t kWhereCount = static_cast<size_t>(Where::kEnd) + 1;

// The field whose value comes next: set by its key, consumed by its value.
enum class Field : uint8_t {
  kNone,
  kDomain,                // RateLimitRequest.domain
  kDescriptors,           // RateLimitRequest.descriptors
  kHitsAddend,            // RateLimitRequest.hits_addend (uint32)
  kEntries,               // RateLimitDescriptor.entries
  kLimit,                 // RateLimitDescriptor.limit
  kDescriptorHitsAddend,  // RateLimitDescriptor.hits_addend (google.protobuf.UInt64Value)
  kIsNegativeHits,        // RateLimitDescriptor.is_negative_hits (bool)
  kKey,                   // Entry.key
  kValue,                 // Entry.value
  kRequestsPerUnit,       // RateLimitOverride.requests_per_unit (uint32)
  kUnit,                  // RateLimitOverride.unit (envoy.type.v3.RateLimitUnit)
};

// Returns the field that `key` names inside the object `where`, in its JSON name or its proto
// name, or Field::kNone.
Field FieldNamed(Where where, std::string_view key) {
  switch (where) {
    case Where::kRequest:
      if (key == "domain") return Field::kDomain;
      if (key == "descriptors") return Field::kDescriptors;
      if (key == "hitsAddend" || key == "hits_addend") return Field::kHitsAddend;
      break;
    case Where::kDescriptor:
      if (key == "entries") return Field::kEntries;
      if (key == "limit") return Field::kLimit;
      if (key == "hitsAddend" || key == "hits_addend") return Field::kDescriptorHitsAddend;
      if (key == "isNegativeHits" || key == "is_negative_hits") return Field::kIsNegativeHits;
      break;
    case Where::kEntry:
      if (key == "key") return Field::kKey;
      if (key == "value") return Field::kValue;
      break;
    case Where::kLimit:
      if (key == "requestsPerUnit" || key == "requests_per_unit") return Field::kRequestsPerUnit;
      if (key == "unit") return Field::kUnit;
      break;
    default:
      break;
  }
  return Field::kNone;
}

// Boost.JSON's handler concept: names and signatures are Boost's, hence the NOLINTs.
// NOLINTBEGIN(readability-identifier-naming)
class RequestHandler {
 public:
  static constexpr size_t max_array_size = std::numeric_limits<size_t>::max();
  static constexpr size_t max_object_size = std::numeric_limits<size_t>::max();
  static constexpr size_t max_string_size = std::numeric_limits<size_t>::max();
  static constexpr size_t max_key_size = std::numeric_limits<size_t>::max();

  explicit RequestHandler(RateLimitRequest* out) : out_(out) {}

  bool finished() const { return where_ == Where::kEnd; }

  bool on_document_begin(boost::json::error_code& /*ec*/) { return true; }
  bool on_document_end(boost::json::error_code& /*ec*/) { return true; }

  bool on_object_begin(boost::json::error_code& ec) {
    switch (where_) {
      case Where::kStart:
        return Enter(Where::kRequest);
      case Where::kDescriptors:
        descriptor_ = out_->add_descriptors();
        return Enter(Where::kDescriptor);
      case Where::kEntries:
        entry_ = descriptor_->add_entries();
        return Enter(Where::kEntry);
      case Where::kDescriptor:
        if (Take(Field::kLimit)) {
          limit_ = descriptor_->mutable_limit();
          return Enter(Where::kLimit);
        }
        break;
      default:
        break;
    }
    return GiveUp(ec);
  }

  bool on_object_end(size_t /*n*/, boost::json::error_code& ec) {
    switch (where_) {
      case Where::kRequest:
        where_ = Where::kEnd;
        return true;
      case Where::kDescriptor:
        where_ = Where::kDescriptors;
        return true;
      case Where::kEntry:
        where_ = Where::kEntries;
        return true;
      case Where::kLimit:
        where_ = Where::kDescriptor;
        return true;
      default:
        return GiveUp(ec);
    }
  }

  bool on_array_begin(boost::json::error_code& ec) {
    if (where_ == Where::kRequest && Take(Field::kDescriptors)) {
      where_ = Where::kDescriptors;
      return true;
    }
    if (where_ == Where::kDescriptor && Take(Field::kEntries)) {
      where_ = Where::kEntries;
      return true;
    }
    return GiveUp(ec);
  }

  bool on_array_end(size_t /*n*/, boost::json::error_code& ec) {
    if (where_ == Where::kDescriptors) {
      where_ = Where::kRequest;
      return true;
    }
    if (where_ == Where::kEntries) {
      where_ = Where::kDescriptor;
      return true;
    }
    return GiveUp(ec);
  }

  bool on_key_part(JsonView s, size_t /*n*/, boost::json::error_code& /*ec*/) {
    key_.append(s.data(), s.size());
    return true;
  }

  bool on_key(JsonView s, size_t /*n*/, boost::json::error_code& ec) {
    std::string_view key = View(s);
    if (!key_.empty()) {
      key_.append(s.data(), s.size());
      key = key_;
    }
    const Field field = FieldNamed(where_, key);
    key_.clear();
    // A key twice (in one spelling or both) is left to protobuf, whatever it makes of it.
    const auto bit = static_cast<uint16_t>(1U << static_cast<unsigned>(field));
    uint16_t& seen = seen_[static_cast<size_t>(where_)];
    if (field == Field::kNone || (seen & bit) != 0) return GiveUp(ec);
    seen |= bit;
    pending_ = field;
    return true;
  }

  bool on_string_part(JsonView s, size_t /*n*/, boost::json::error_code& /*ec*/) {
    text_.append(s.data(), s.size());
    return true;
  }

  bool on_string(JsonView s, size_t /*n*/, boost::json::error_code& ec) {
    std::string_view value = View(s);
    if (!text_.empty()) {
      text_.append(s.data(), s.size());
      value = text_;
    }
    const bool ok = OnString(value);
    text_.clear();
    return ok || GiveUp(ec);
  }

  bool on_number_part(JsonView s, boost::json::error_code& /*ec*/) {
    text_.append(s.data(), s.size());
    return true;
  }

  // Boost's value is not used: the number's text decides, so "1.0" and "1e0" give up.
  bool on_int64(int64_t /*i*/, JsonView s, boost::json::error_code& ec) { return OnNumber(s, ec); }
  bool on_uint64(uint64_t /*u*/, JsonView s, boost::json::error_code& ec) {
    return OnNumber(s, ec);
  }
  bool on_double(double /*d*/, JsonView /*s*/, boost::json::error_code& ec) { return GiveUp(ec); }
  bool on_bool(bool b, boost::json::error_code& ec) {
    const Field field = pending_;
    pending_ = Field::kNone;
    if (field != Field::kIsNegativeHits) return GiveUp(ec);
    descriptor_->set_is_negative_hits(b);
    return true;
  }
  bool on_null(boost::json::error_code& ec) { return GiveUp(ec); }
  bool on_comment_part(JsonView /*s*/, boost::json::error_code& ec) { return GiveUp(ec); }
  bool on_comment(JsonView /*s*/, boost::json::error_code& ec) { return GiveUp(ec); }

 private:
  bool Enter(Where object) {
    where_ = object;
    seen_[static_cast<size_t>(object)] = 0;
    return true;
  }

  // Consumes the pending field when it is `field`.
  bool Take(Field field) {
    if (pending_ != field) return false;
    pending_ = Field::kNone;
    return true;
  }

  // Any error will do: the caller only asks whether the fast path finished.
  static bool GiveUp(boost::json::error_code& ec) {
    ec = boost::json::error::syntax;
    return false;
  }

  bool OnString(std::string_view value) {
    const Field field = pending_;
    pending_ = Field::kNone;
    switch (field) {
      case Field::kDomain:
        out_->set_domain(value.data(), value.size());
        return true;
      case Field::kKey:
        entry_->set_key(value.data(), value.size());
        return true;
      case Field::kValue:
        entry_->set_value(value.data(), value.size());
        return true;
      case Field::kUnit: {
        // Exact names only: protobuf also reads "1" as SECOND, but that is for it to decide.
        envoy::type::v3::RateLimitUnit unit{};
        if (value.size() > 16 || !envoy::type::v3::RateLimitUnit_Parse(std::string(value), &unit)) {
          return false;
        }
        limit_->set_unit(unit);
        return true;
      }
      case Field::kDescriptorHitsAddend: {
        uint64_t hits = 0;
        if (!CanonicalUnsigned(value, std::numeric_limits<uint64_t>::max(), &hits)) return false;
        descriptor_->mutable_hits_addend()->set_value(hits);
        return true;
      }
      default:
        return false;
    }
  }

  bool OnNumber(JsonView last, boost::json::error_code& ec) {
    std::string_view digits = View(last);
    if (!text_.empty()) {
      text_.append(last.data(), last.size());
      digits = text_;
    }
    const Field field = pending_;
    pending_ = Field::kNone;
    constexpr uint64_t kMax32 = std::numeric_limits<uint32_t>::max();
    uint64_t value = 0;
    bool ok = false;
    switch (field) {
      case Field::kHitsAddend:
        ok = CanonicalUnsigned(digits, kMax32, &value);
        if (ok) out_->set_hits_addend(static_cast<uint32_t>(value));
        break;
      case Field::kRequestsPerUnit:
        ok = CanonicalUnsigned(digits, kMax32, &value);
        if (ok) limit_->set_requests_per_unit(static_cast<uint32_t>(value));
        break;
      case Field::kDescriptorHitsAddend:
        ok = CanonicalUnsigned(digits, std::numeric_limits<uint64_t>::max(), &value);
        if (ok) descriptor_->mutable_hits_addend()->set_value(value);
        break;
      default:
        break;
    }
    text_.clear();
    return ok || GiveUp(ec);
  }

  RateLimitRequest* out_;
  Descriptor* descriptor_ = nullptr;
  Descriptor::Entry* entry_ = nullptr;
  Descriptor::RateLimitOverride* limit_ = nullptr;
  Where where_ = Where::kStart;
  Field pending_ = Field::kNone;
  // The keys seen in the open object of each kind, as bits of Field.
  std::array<uint16_t, kWhereCount> seen_{};
  // A key, string or number that Boost delivers in parts (after escapes, or split numbers).
  std::string key_;
  std::string text_;
};
// NOLINTEND(readability-identifier-naming)
}  // namespace

bool ParseRateLimitRequestJsonFast(std::string_view json, server::RateLimitRequest* out) {
  out->Clear();
  boost::json::basic_parser<RequestHandler> parser(boost::json::parse_options{}, out);
  boost::json::error_code ec;
  const size_t n = parser.write_some(false, json.data(), json.size(), ec);
  return !ec && n == json.size() && parser.done() && parser.handler().finished();
}

}  // namespace sluice::internal

namespace sluice::server {

absl::Status ParseRateLimitRequestJson(std::string_view json, RateLimitRequest* out) {
  if (internal::ParseRateLimitRequestJsonFast(json, out)) return absl::OkStatus();
  // Not certain: protobuf decides, on the whole input, from a clean message.
  out->Clear();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), out, options);
  if (status.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("bad RateLimitRequest JSON: ", std::string(status.message())));
}

}  // namespace sluice::server
