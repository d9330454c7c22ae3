#include "tests/testing/test_vectors.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "boost/json.hpp"

#include "sluice/decision.h"
#include "sluice/limit.h"
#include "sluice/status_macros.h"

#include "src/util/strings.h"

namespace sluice::testing {
namespace {

namespace json = boost::json;

// Where in a file a value sits, for error messages: "gcra.json: cases[2].steps[0].remaining".
class Path {
 public:
  explicit Path(std::string file, std::string location = "")
      : file_(std::move(file)), location_(std::move(location)) {}

  Path Field(std::string_view name) const {
    return Path(file_, location_.empty() ? std::string(name)
                                         : absl::StrCat(location_, ".", internal::AbslView(name)));
  }
  Path Index(size_t i) const { return Path(file_, absl::StrCat(location_, "[", i, "]")); }

  absl::Status Error(std::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrCat(file_, location_.empty() ? "" : ": ", location_,
                                                   ": ", internal::AbslView(problem)));
  }

 private:
  std::string file_;
  std::string location_;
};

// The accessors below use Boost.JSON's non-throwing if_*() forms, so a malformed file becomes a
// Status rather than an exception.

absl::StatusOr<const json::object*> AsObject(const json::value& v, const Path& path,
                                             std::initializer_list<std::string_view> allowed) {
  const json::object* object = v.if_object();
  if (object == nullptr) {
    return path.Error("expected an object");
  }
  for (const json::key_value_pair& member : *object) {
    const std::string_view key = member.key();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return path.Field(key).Error("unknown key");
    }
  }
  return object;
}

absl::StatusOr<const json::value*> Member(const json::object& object, std::string_view key,
                                          const Path& path) {
  const json::value* v = object.if_contains(key);
  if (v == nullptr) {
    return path.Field(key).Error("missing");
  }
  return v;
}

absl::StatusOr<int64_t> IntMember(const json::object& object, std::string_view key,
                                  const Path& path) {
  SLUICE_ASSIGN_OR_RETURN(const json::value* v, Member(object, key, path));
  // Integers that fit int64 parse as int64; 1.0, 1e3 and numbers beyond int64 do not.
  if (const int64_t* i = v->if_int64()) {
    return *i;
  }
  return path.Field(key).Error("expected an integer (no fraction or exponent)");
}

absl::StatusOr<bool> BoolMember(const json::object& object, std::string_view key,
                                const Path& path) {
  SLUICE_ASSIGN_OR_RETURN(const json::value* v, Member(object, key, path));
  if (const bool* b = v->if_bool()) {
    return *b;
  }
  return path.Field(key).Error("expected true or false");
}

absl::StatusOr<std::string> StringMember(const json::object& object, std::string_view key,
                                         const Path& path) {
  SLUICE_ASSIGN_OR_RETURN(const json::value* v, Member(object, key, path));
  if (const json::string* s = v->if_string(); s != nullptr && !s->empty()) {
    return std::string(*s);
  }
  return path.Field(key).Error("expected a non-empty string");
}

absl::StatusOr<const json::array*> ArrayMember(const json::object& object, std::string_view key,
                                               const Path& path) {
  SLUICE_ASSIGN_OR_RETURN(const json::value* v, Member(object, key, path));
  if (const json::array* a = v->if_array(); a != nullptr && !a->empty()) {
    return a;
  }
  return path.Field(key).Error("expected a non-empty array");
}

absl::StatusOr<Limit> ParseLimit(Algorithm algorithm, const json::value& v, const Path& path) {
  SLUICE_ASSIGN_OR_RETURN(const json::object* object,
                          AsObject(v, path, {"limit", "period_ms", "burst"}));
  Limit limit;
  limit.algorithm = algorithm;
  SLUICE_ASSIGN_OR_RETURN(limit.limit, IntMember(*object, "limit", path));
  SLUICE_ASSIGN_OR_RETURN(const int64_t period_ms, IntMember(*object, "period_ms", path));
  // Range-check before converting so the multiplication cannot overflow.
  if (period_ms < 1 || period_ms > kMaxPeriod.count() / 1000) {
    return path.Field("period_ms").Error("out of range");
  }
  limit.period = std::chrono::milliseconds(period_ms);
  if (object->contains("burst")) {
    SLUICE_ASSIGN_OR_RETURN(limit.burst, IntMember(*object, "burst", path));
  }
  // A vector must be a valid input: the stores would reject anything else before deciding.
  if (absl::Status s = ValidateLimit(limit); !s.ok()) {
    return path.Error(std::string(s.message()));
  }
  return limit;
}

// A refund step of a lease file.
absl::StatusOr<VectorStep> ParseRefundStep(const json::object& object, const Path& path) {
  VectorStep step{};
  SLUICE_ASSIGN_OR_RETURN(step.now_us, IntMember(object, "now_us", path));
  SLUICE_ASSIGN_OR_RETURN(const json::value* v, Member(object, "refund", path));
  const Path refund_path = path.Field("refund");
  SLUICE_ASSIGN_OR_RETURN(const json::object* refund,
                          AsObject(*v, refund_path, {"ends_us", "granted", "unspent"}));
  VectorRefund r{};
  SLUICE_ASSIGN_OR_RETURN(r.ends_us, IntMember(*refund, "ends_us", refund_path));
  SLUICE_ASSIGN_OR_RETURN(r.granted, IntMember(*refund, "granted", refund_path));
  SLUICE_ASSIGN_OR_RETURN(r.unspent, IntMember(*refund, "unspent", refund_path));
  SLUICE_ASSIGN_OR_RETURN(r.refunded, IntMember(object, "refunded", path));
  if (r.granted < 1 || r.granted > kMaxCost || r.unspent < 1 || r.unspent > r.granted ||
      r.refunded < 0 || r.refunded > r.unspent) {
    return refund_path.Error("needs 1 <= unspent <= granted <= 2^32, 0 <= refunded <= unspent");
  }
  step.refund = r;
  return step;
}

absl::StatusOr<VectorStep> ParseStep(const Limit& limit, const json::value& v, const Path& path,
                                     bool lease_file) {
  if (const json::object* object = v.if_object();
      lease_file && object != nullptr && object->contains("refund")) {
    SLUICE_RETURN_IF_ERROR(AsObject(v, path, {"now_us", "refund", "refunded", "note"}).status());
    return ParseRefundStep(*object, path);
  }
  SLUICE_ASSIGN_OR_RETURN(
      const json::object* object,
      lease_file ? AsObject(v, path,
                            {"now_us", "credit", "cost", "want", "ttl_us", "allowed", "remaining",
                             "reset_after_us", "retry_after_us", "granted", "ends_us", "note"})
                 : AsObject(v, path,
                            {"now_us", "credit", "cost", "allowed", "remaining", "reset_after_us",
                             "retry_after_us", "note"}));
  VectorStep step{};
  SLUICE_ASSIGN_OR_RETURN(step.now_us, IntMember(*object, "now_us", path));
  SLUICE_ASSIGN_OR_RETURN(step.cost, IntMember(*object, "cost", path));
  if (object->contains("credit")) {
    SLUICE_ASSIGN_OR_RETURN(step.credit, BoolMember(*object, "credit", path));
  }
  SLUICE_ASSIGN_OR_RETURN(step.expect.allowed, BoolMember(*object, "allowed", path));
  SLUICE_ASSIGN_OR_RETURN(step.expect.remaining, IntMember(*object, "remaining", path));
  SLUICE_ASSIGN_OR_RETURN(const int64_t reset_after_us, IntMember(*object, "reset_after_us", path));
  SLUICE_ASSIGN_OR_RETURN(const int64_t retry_after_us, IntMember(*object, "retry_after_us", path));
  // The note is for the reader checking the arithmetic; only its type is checked.
  if (const json::value* note = object->if_contains("note");
      note != nullptr && !note->is_string()) {
    return path.Field("note").Error("expected a string");
  }
  step.expect.limit = limit.Capacity();
  step.expect.reset_after = std::chrono::microseconds(reset_after_us);
  step.expect.retry_after = std::chrono::microseconds(retry_after_us);
  // The same domain the algorithms require (docs/algorithms.md, "Inputs").
  if (step.now_us < 0 || step.now_us >= (int64_t{1} << 52)) {
    return path.Field("now_us").Error("must be in [0, 2^52)");
  }
  if (absl::Status s = ValidateCost(step.cost); !s.ok()) {
    return path.Error(std::string(s.message()));
  }
  // A credit is always allowed (docs/algorithms.md, "Credits"), and never leases.
  if (step.credit && (!step.expect.allowed || retry_after_us != 0)) {
    return path.Error("a credit is allowed with retry_after_us 0");
  }
  if (step.credit && object->contains("want")) {
    return path.Field("want").Error("a credit takes no lease");
  }
  if (object->contains("want")) {
    VectorLease lease{};
    SLUICE_ASSIGN_OR_RETURN(lease.want, IntMember(*object, "want", path));
    SLUICE_ASSIGN_OR_RETURN(lease.ttl_us, IntMember(*object, "ttl_us", path));
    SLUICE_ASSIGN_OR_RETURN(lease.granted, IntMember(*object, "granted", path));
    SLUICE_ASSIGN_OR_RETURN(lease.ends_us, IntMember(*object, "ends_us", path));
    // What lease_all accepts.
    if (lease.want < 0 || lease.want > kMaxCost || lease.ttl_us < 1000 ||
        lease.ttl_us > kMaxPeriod.count() || lease.granted < 0 || lease.granted > lease.want) {
      return path.Error("needs 0 <= granted <= want <= 2^32 and 1 ms <= ttl_us <= 366 days");
    }
    step.lease = lease;
  } else if (object->contains("ttl_us") || object->contains("granted") ||
             object->contains("ends_us")) {
    return path.Error("ttl_us, granted and ends_us belong to a step with a want");
  }
  return step;
}

absl::StatusOr<std::vector<VectorCase>> ParseFile(const std::filesystem::path& file,
                                                  bool lease_file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(file.string(), ": cannot be read"));
  }
  std::ostringstream text;
  text << in.rdbuf();

  const Path root(file.filename().string());
  std::error_code ec;
  const json::value document = json::parse(text.str(), ec);
  if (ec) {
    return root.Error(absl::StrCat("not JSON: ", ec.message()));
  }
  SLUICE_ASSIGN_OR_RETURN(const json::object* object,
                          AsObject(document, root, {"algorithm", "cases"}));
  SLUICE_ASSIGN_OR_RETURN(const std::string algorithm_name,
                          StringMember(*object, "algorithm", root));
  absl::StatusOr<Algorithm> algorithm = ParseAlgorithm(algorithm_name);
  if (!algorithm.ok()) {
    return root.Field("algorithm").Error(std::string(algorithm.status().message()));
  }
  SLUICE_ASSIGN_OR_RETURN(const json::array* cases, ArrayMember(*object, "cases", root));

  std::vector<VectorCase> out;
  for (size_t i = 0; i < cases->size(); ++i) {
    const Path case_path = root.Field("cases").Index(i);
    SLUICE_ASSIGN_OR_RETURN(const json::object* case_object,
                            AsObject((*cases)[i], case_path, {"name", "limit", "steps"}));
    VectorCase c;
    SLUICE_ASSIGN_OR_RETURN(const std::string name, StringMember(*case_object, "name", case_path));
    c.name = absl::StrCat(lease_file ? "lease/" : "", algorithm_name, "/", name);
    SLUICE_ASSIGN_OR_RETURN(const json::value* limit, Member(*case_object, "limit", case_path));
    SLUICE_ASSIGN_OR_RETURN(c.limit, ParseLimit(*algorithm, *limit, case_path.Field("limit")));
    SLUICE_ASSIGN_OR_RETURN(const json::array* steps,
                            ArrayMember(*case_object, "steps", case_path));
    for (size_t j = 0; j < steps->size(); ++j) {
      SLUICE_ASSIGN_OR_RETURN(
          VectorStep step,
          ParseStep(c.limit, (*steps)[j], case_path.Field("steps").Index(j), lease_file));
      c.steps.push_back(step);
    }
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<std::vector<VectorCase>> LoadDirectory(const std::filesystem::path& dir,
                                                      bool lease_files) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".json") {
      files.push_back(it->path());
    }
  }
  if (ec) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": ", ec.message()));
  }
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": no *.json files"));
  }
  // Directory order is unspecified; name order makes runs and failures reproducible.
  std::sort(files.begin(), files.end());

  std::vector<VectorCase> all;
  std::set<std::string> names;
  for (const std::filesystem::path& file : files) {
    SLUICE_ASSIGN_OR_RETURN(std::vector<VectorCase> cases, ParseFile(file, lease_files));
    for (VectorCase& c : cases) {
      if (!names.insert(c.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(file.filename().string(), ": duplicate case name ", c.name));
      }
      all.push_back(std::move(c));
    }
  }
  return all;
}

// Loads tests/vectors/<subdirectory> under SLUICE_SOURCE_DIR, or aborts (LoadAllVectors()).
std::vector<VectorCase> LoadOrAbort(const char* caller, const char* subdirectory,
                                    bool lease_files) {
  const char* source_dir = std::getenv("SLUICE_SOURCE_DIR");
  absl::StatusOr<std::vector<VectorCase>> vectors =
      source_dir == nullptr
          ? absl::FailedPreconditionError(
                "SLUICE_SOURCE_DIR is not set (ctest sets it; when running a test binary by hand, "
                "set it to the source tree)")
          : LoadDirectory(std::filesystem::path(source_dir) / "tests" / subdirectory, lease_files);
  if (!vectors.ok()) {
    // No test can run on a broken fixture, and a Status cannot be reported from static
    // initialisation (where parameterized tests are registered), so fail loudly here.
    std::cerr << "sluice::testing::" << caller << ": " << vectors.status() << std::endl;
    std::abort();
  }
  return *std::move(vectors);
}

}  // namespace

absl::StatusOr<std::vector<VectorCase>> LoadVectorsFromDirectory(const std::filesystem::path& dir) {
  return LoadDirectory(dir, /*lease_files=*/false);
}

absl::StatusOr<std::vector<VectorCase>> LoadLeaseVectorsFromDirectory(
    const std::filesystem::path& dir) {
  return LoadDirectory(dir, /*lease_files=*/true);
}

std::vector<VectorCase> LoadAllVectors() {
  return LoadOrAbort("LoadAllVectors", "vectors", /*lease_files=*/false);
}

std::vector<VectorCase> LoadLeaseVectors() {
  return LoadOrAbort("LoadLeaseVectors", "vectors/lease", /*lease_files=*/true);
}

}  // namespace sluice::testing
