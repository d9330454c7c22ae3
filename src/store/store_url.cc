#include "sluice/store_url.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include <boost/url/encode.hpp>
#include <boost/url/grammar/lut_chars.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url_view.hpp>

#include "src/util/strings.h"

namespace sluice {
namespace {

namespace urls = boost::urls;
using internal::AbslView;

constexpr std::string_view kForms =
    R"(expected "memory", "redis://[[user]:password@]host[:port][/db]" or "rediss://...")";
// Upper bound on timeouts given in the URL: beyond an hour a value is surely a unit mistake.
constexpr int64_t kMaxTimeoutMs = 3'600'000;
// What a host name may hold once decoded (DNS names, and '_' as container runtimes use it).
constexpr urls::grammar::lut_chars kHostNameChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._";
// Left unencoded in Redacted()'s parameter values, for readable paths; the rest is escaped so that
// '&', '=', '+', '#' and spaces in a value parse back as themselves, and '@', which ParseStoreUrl()
// refuses after the host, as "%40".
constexpr urls::grammar::lut_chars kParamValueChars = urls::unreserved_chars + "/:";
// The hint of every error about a mis-split authority.
constexpr std::string_view kEncodeHint =
    "percent-encode reserved characters such as @ : / ? # in the user name and password";

absl::Status Invalid(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("invalid store URL: ", AbslView(what)));
}

absl::StatusOr<int64_t> ParseInt(std::string_view name, std::string_view text, int64_t min,
                                 int64_t max) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(AbslView(text), &value) || value < min || value > max) {
    return Invalid(absl::StrCat(AbslView(name), " must be an integer in [", min, ", ", max,
                                "], got \"", AbslView(text), "\""));
  }
  return value;
}

absl::StatusOr<bool> ParseBool(std::string_view name, std::string_view text) {
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no") return false;
  return Invalid(
      absl::StrCat(AbslView(name), " must be true or false, got \"", AbslView(text), "\""));
}

// Applies one query parameter. Values of the parameters are file paths, numbers and names, never
// secrets, so they may be quoted in errors.
absl::Status ApplyParam(std::string_view key, std::string_view value, StoreUrl& url) {
  if (key == "password_file") {
    if (value.empty()) return Invalid("password_file is empty");
    url.password_file = std::string(value);
  } else if (key == "timeout_ms") {
    absl::StatusOr<int64_t> ms = ParseInt(key, value, 1, kMaxTimeoutMs);
    if (!ms.ok()) return ms.status();
    url.command_timeout = std::chrono::milliseconds(*ms);
  } else if (key == "connect_timeout_ms") {
    absl::StatusOr<int64_t> ms = ParseInt(key, value, 1, kMaxTimeoutMs);
    if (!ms.ok()) return ms.status();
    url.connect_timeout = std::chrono::milliseconds(*ms);
  } else if (key == "connections") {
    absl::StatusOr<int64_t> n = ParseInt(key, value, 1, StoreUrl::kMaxConnections);
    if (!n.ok()) return n.status();
    url.connections = static_cast<int>(*n);
  } else if (key == "tls_verify") {
    absl::StatusOr<bool> verify = ParseBool(key, value);
    if (!verify.ok()) return verify.status();
    url.tls_verify = *verify;
  } else if (key == "tls_ca_file") {
    url.tls_ca_file = std::string(value);
  } else if (key == "tls_cert_file") {
    url.tls_cert_file = std::string(value);
  } else if (key == "tls_key_file") {
    url.tls_key_file = std::string(value);
  } else if (key == "tls_server_name") {
    url.tls_server_name = std::string(value);
  } else {
    return Invalid(absl::StrCat("unknown parameter \"", AbslView(key), "\""));
  }
  return absl::OkStatus();
}

absl::Status ParseHost(const urls::url_view& view, StoreUrl& url) {
  switch (view.host_type()) {
    case urls::host_type::name:
    case urls::host_type::ipv4:
    case urls::host_type::ipv6:
      url.host = view.host_address();
      break;
    default:
      return Invalid("unsupported host");
  }
  if (url.host.empty()) return Invalid("missing host");
  // A name is decoded; "h%2Fx" or "a%3Ab" cannot be resolved and would not survive Redacted().
  if (view.host_type() == urls::host_type::name &&
      !std::all_of(url.host.begin(), url.host.end(), [](char c) { return kHostNameChars(c); })) {
    return Invalid("the host name may hold only letters, digits, '.', '-' and '_'");
  }
  if (view.has_port() && !view.port().empty()) {
    absl::StatusOr<int64_t> port = ParseInt("port", view.port(), 1, 65535);
    if (!port.ok()) return port.status();
    url.port = static_cast<int>(*port);
  }
  return absl::OkStatus();
}

absl::Status ParseDb(std::string_view path, StoreUrl& url) {
  if (path.empty() || path == "/") return absl::OkStatus();
  // Boost.URL 1.81 parses "host:6379:1" as port 6379 and path ":1", and "host:abc" as an empty
  // port and path "abc": a path that does not start with '/' is really a malformed port.
  if (path[0] != '/') return Invalid("malformed port");
  absl::StatusOr<int64_t> db =
      ParseInt("database (the path)", path.substr(1), 0, std::numeric_limits<int32_t>::max());
  if (!db.ok()) return db.status();
  url.db = static_cast<int>(*db);
  return absl::OkStatus();
}

absl::Status CheckConsistency(const StoreUrl& url) {
  if (!url.password.empty() && !url.password_file.empty()) {
    return Invalid("give the password either in the URL or in password_file, not both");
  }
  if (!url.username.empty() && url.password.empty() && url.password_file.empty()) {
    return Invalid("a user name needs a password (user:password@host or ?password_file=)");
  }
  const bool any_tls_param = !url.tls_verify || !url.tls_ca_file.empty() ||
                             !url.tls_cert_file.empty() || !url.tls_key_file.empty() ||
                             !url.tls_server_name.empty();
  if (!url.tls && any_tls_param) return Invalid("tls_* parameters need rediss://");
  if (url.tls_cert_file.empty() != url.tls_key_file.empty()) {
    return Invalid("tls_cert_file and tls_key_file go together");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StoreUrl> ParseStoreUrl(std::string_view text) {
  if (absl::EqualsIgnoreCase(AbslView(text), "memory")) return StoreUrl{};
  StoreUrl url;
  url.kind = StoreUrl::Kind::kRedis;
  const size_t sep = text.find("://");
  const std::string_view scheme = sep == std::string_view::npos ? "" : text.substr(0, sep);
  if (absl::EqualsIgnoreCase(AbslView(scheme), "rediss")) {
    url.tls = true;
  } else if (!absl::EqualsIgnoreCase(AbslView(scheme), "redis")) {
    return Invalid(kForms);
  }
  urls::result<urls::url_view> parsed = urls::parse_uri(text);
  if (!parsed.has_value()) {
    // Boost's message never quotes the input, so it cannot leak the password.
    return Invalid(absl::StrCat(parsed.error().message(), " (", AbslView(kEncodeHint), ")"));
  }
  const urls::url_view& view = *parsed;
  // A password with an unencoded '/', '?' or '#' ends the authority early: "redis://u:123/x@h"
  // reads as host "u", port 123 and path "/x@h", and "redis://u:123?x@h" as query "x@h". The rest
  // of the password then lands in the path, the query or the fragment, where an error would quote
  // it and Redacted() would log it ("rediss://u:1?tls_server_name=x@h" even parsed). Its
  // signature is the '@' that ended the user information, so an unencoded '@' anywhere after the
  // host is refused, before the port, path and parameters, whose errors quote them, are looked
  // at. A parameter value that really holds '@' writes it as "%40".
  const auto holds_at = [](urls::pct_string_view part) {
    return part.find('@') != urls::pct_string_view::npos;
  };
  if (holds_at(view.encoded_path()) || holds_at(view.encoded_query()) ||
      holds_at(view.encoded_fragment())) {
    return Invalid(absl::StrCat("'@' after the host; ", AbslView(kEncodeHint),
                                ", and '@' in parameter values as %40"));
  }
  if (view.has_fragment()) return Invalid("a fragment (#...) is not allowed");
  if (view.has_userinfo()) {
    url.username = view.user();
    if (view.has_password()) url.password = view.password();
    if (url.username.empty() && url.password.empty()) return Invalid("empty user information");
  }
  if (absl::Status s = ParseHost(view, url); !s.ok()) return s;
  if (absl::Status s = ParseDb(view.encoded_path().decode(), url); !s.ok()) return s;
  for (const urls::param& param : view.params()) {
    if (absl::Status s = ApplyParam(param.key, param.value, url); !s.ok()) return s;
  }
  if (absl::Status s = CheckConsistency(url); !s.ok()) return s;
  return url;
}

std::string StoreUrl::HostPort() const {
  return host.find(':') == std::string::npos ? absl::StrCat(host, ":", port)
                                             : absl::StrCat("[", host, "]:", port);
}

std::string StoreUrl::Redacted() const {
  if (kind == Kind::kMemory) return "memory";
  std::string out = tls ? "rediss://" : "redis://";
  if (!username.empty() || !password.empty()) {
    absl::StrAppend(&out, urls::encode(username, urls::unreserved_chars),
                    password.empty() ? "" : ":***", "@");
  }
  absl::StrAppend(&out, HostPort());
  if (db != 0) absl::StrAppend(&out, "/", db);
  char sep = '?';
  auto param = [&](std::string_view key, std::string_view value) {
    absl::StrAppend(&out, absl::string_view(&sep, 1), AbslView(key), "=",
                    urls::encode(value, kParamValueChars));
    sep = '&';
  };
  if (!password_file.empty()) param("password_file", password_file);
  if (command_timeout) param("timeout_ms", absl::StrCat(command_timeout->count()));
  if (connect_timeout) param("connect_timeout_ms", absl::StrCat(connect_timeout->count()));
  if (connections) param("connections", absl::StrCat(*connections));
  if (!tls_verify) param("tls_verify", "false");
  if (!tls_ca_file.empty()) param("tls_ca_file", tls_ca_file);
  if (!tls_cert_file.empty()) param("tls_cert_file", tls_cert_file);
  if (!tls_key_file.empty()) param("tls_key_file", tls_key_file);
  if (!tls_server_name.empty()) param("tls_server_name", tls_server_name);
  return out;
}

}  // namespace sluice
