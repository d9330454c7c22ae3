// The pieces of ApplyReferenceEnvironment() (settings.h), shared by settings.cc and
// settings_redis.cc.
#ifndef SLUICE_SERVER_SETTINGS_INTERNAL_H_
#define SLUICE_SERVER_SETTINGS_INTERNAL_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"

#include "src/server/settings.h"

namespace sluice::server::internal {

// Reads variables, collecting refusals and notes instead of stopping at the first.
class EnvReader {
 public:
  EnvReader(const EnvLookup& env, const absl::flat_hash_set<std::string>& flags_given,
            bool reference_mode, ServerSettings& settings)
      : env_(env), flags_given_(flags_given), reference_mode_(reference_mode), s_(settings) {}

  ServerSettings& settings() { return s_; }
  bool reference_mode() const { return reference_mode_; }
  // True when `flag` was given on the command line (its variables are then not read).
  bool FlagGiven(std::string_view flag) const { return flags_given_.contains(std::string(flag)); }

  // The value of `name` when set and not empty.
  std::optional<std::string> Get(std::string_view name) const;
  // The value of `name`, else `reference_default` when started the reference's way, else nullopt.
  std::optional<std::string> GetOr(std::string_view name, std::string_view reference_default) const;
  // Parsed forms; a value that does not parse is refused (nullopt).
  std::optional<bool> Bool(std::string_view name, std::optional<bool> reference_default);
  std::optional<int64_t> Int(std::string_view name, int64_t min, int64_t max,
                             std::optional<int64_t> reference_default);
  std::optional<std::chrono::milliseconds> Duration(std::string_view name,
                                                    std::string_view reference_default);

  void Refuse(std::string_view name, std::string_view why);
  void Note(std::string_view text);
  // Notes `names` that are set as unused because `feature` is off.
  void NoteUnused(const std::vector<std::string_view>& names, std::string_view feature);

  const std::vector<std::string>& refusals() const { return refusals_; }

 private:
  const EnvLookup& env_;
  const absl::flat_hash_set<std::string>& flags_given_;
  const bool reference_mode_;
  ServerSettings& s_;
  std::vector<std::string> refusals_;
};

// The Redis variables (REDIS_*, REDIS_PERSECOND_*, BACKEND_TYPE) -> settings.store and
// settings.per_second_store.
void ApplyRedisEnvironment(EnvReader& reader);

}  // namespace sluice::server::internal

#endif  // SLUICE_SERVER_SETTINGS_INTERNAL_H_
