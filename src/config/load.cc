// Loading: files and directories into one immutable RateLimitConfig.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "sluice/config.h"
#include "sluice/status_macros.h"

#include "src/config/config_tree.h"
#include "src/config/parse.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

// A config file is a few kilobytes; refuse to slurp something that obviously is not one.
constexpr std::uintmax_t kMaxFileBytes = 64 << 20;

absl::StatusOr<ConfigSource> ReadSource(const fs::path& path) {
  std::error_code error;
  const std::uintmax_t size = fs::file_size(path, error);
  if (error) {
    return absl::NotFoundError(absl::StrCat(path.string(), ": ", error.message()));
  }
  if (size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": ", size, " bytes is too large for a config file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::ErrnoToStatus(errno, path.string());
  }
  ConfigSource source;
  source.name = path.string();
  source.content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return absl::ErrnoToStatus(errno, path.string());
  }
  return source;
}

bool IsConfigName(const std::string& name, bool ignore_dotfiles) {
  return !(ignore_dotfiles && absl::StartsWith(name, ".")) &&
         (absl::EndsWith(name, ".yaml") || absl::EndsWith(name, ".yml"));
}

// The config files directly inside `dir`, sorted by name so that errors are deterministic.
absl::StatusOr<std::vector<fs::path>> ListConfigFiles(const fs::path& dir, bool ignore_dotfiles) {
  std::vector<fs::path> out;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const fs::path& path = it->path();
    if (!IsConfigName(path.filename().string(), ignore_dotfiles)) {
      continue;
    }
    // status() follows symlinks, as a ConfigMap's `a.yaml -> ..data/a.yaml` needs.
    std::error_code status_error;
    const fs::file_status status = fs::status(path, status_error);
    if (status_error || !fs::exists(status)) {
      return absl::NotFoundError(absl::StrCat(path.string(), ": cannot resolve (broken symlink?)"));
    }
    if (fs::is_regular_file(status)) {
      out.push_back(path);
    }
  }
  if (error) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": ", error.message()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Moves the top-level descriptors of `from` into `into`, as the reference's MERGE_DOMAIN_CONFIG
// loads a second file's descriptors into the domain's map: a key defined at the top level of both
// is a duplicate.
absl::Status MergeDomain(internal::DomainTree& into, internal::DomainTree& from) {
  internal::DescriptorNode& root = into.root;
  for (internal::DescriptorNode& child : from.root.children) {
    if (const internal::DescriptorNode* other = root.FindChild(child.composite)) {
      return absl::InvalidArgumentError(absl::StrCat(
          child.location, ": descriptors: duplicate descriptor composite key '", into.name, ".",
          child.composite, "' (also defined at ", other->location, ")"));
    }
    const size_t index = root.children.size();
    root.by_composite.emplace(child.composite, index);
    if (child.wildcard) root.wildcard_children.push_back(index);
    root.children.push_back(std::move(child));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const RateLimitConfig>> ParseRateLimitConfig(
    absl::Span<const ConfigSource> sources) {
  return ParseRateLimitConfig(sources, ConfigLoadOptions{});
}

absl::StatusOr<std::shared_ptr<const RateLimitConfig>> ParseRateLimitConfig(
    absl::Span<const ConfigSource> sources, const ConfigLoadOptions& options) {
  auto tree = std::make_unique<internal::ConfigTree>();
  for (const ConfigSource& source : sources) {
    SLUICE_ASSIGN_OR_RETURN(internal::DomainTree domain, internal::ParseConfigFile(source));
    if (const auto it = tree->domains.find(domain.name);
        it != tree->domains.end() && options.merge_domains) {
      SLUICE_RETURN_IF_ERROR(MergeDomain(it->second, domain));
      continue;
    }
    // Without merging, sluice keeps one domain per file, as the reference does by default.
    if (const auto it = tree->domains.find(domain.name); it != tree->domains.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(domain.location, ": domain: duplicate domain '", domain.name,
                       "' in config file (also defined at ", it->second.location, ")"));
    }
    std::string name = domain.name;
    tree->domains.emplace(std::move(name), std::move(domain));
  }
  return std::make_shared<const RateLimitConfig>(std::move(tree));
}

absl::StatusOr<std::shared_ptr<const RateLimitConfig>> LoadRateLimitConfig(const fs::path& path) {
  return LoadRateLimitConfig(path, ConfigLoadOptions{});
}

absl::StatusOr<std::shared_ptr<const RateLimitConfig>> LoadRateLimitConfig(
    const fs::path& path, const ConfigLoadOptions& options) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) {
    return absl::NotFoundError(absl::StrCat(path.string(), ": no such file or directory"));
  }
  std::vector<fs::path> files;
  if (fs::is_directory(status)) {
    SLUICE_ASSIGN_OR_RETURN(files, ListConfigFiles(path, options.ignore_dotfiles));
    if (files.empty()) {
      return absl::NotFoundError(absl::StrCat(path.string(), ": no *.yaml or *.yml file"));
    }
  } else if (fs::is_regular_file(status)) {
    files.push_back(path);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": neither a regular file nor a directory"));
  }
  std::vector<ConfigSource> sources;
  sources.reserve(files.size());
  for (const fs::path& file : files) {
    SLUICE_ASSIGN_OR_RETURN(ConfigSource source, ReadSource(file));
    sources.push_back(std::move(source));
  }
  return ParseRateLimitConfig(sources, options);
}

}  // namespace sluice
