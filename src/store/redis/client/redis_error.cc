#include "src/store/redis/client/redis_error.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;

std::string_view FirstWord(std::string_view message) {
  const size_t space = message.find(' ');
  return space == std::string_view::npos ? message : message.substr(0, space);
}

// Error text from Asio: the OS's strerror() or OpenSSL's reason string, never our data.
std::string Reason(const boost::system::error_code& ec) {
  if (ec == boost::asio::ssl::error::stream_truncated) return "TLS stream truncated";
  std::string message = ec.message();
  if (message.empty()) message = absl::StrCat(ec.category().name(), ":", ec.value());
  return message;
}

}  // namespace

RedisErrorKind ClassifyReplyError(std::string_view message) {
  if (message.empty()) return RedisErrorKind::kNone;
  const std::string_view word = FirstWord(message);
  if (word == "NOSCRIPT") return RedisErrorKind::kNoScript;
  if (word == "BUSY") return RedisErrorKind::kBusy;
  if (word == "OOM") return RedisErrorKind::kOom;
  if (word == "NOAUTH" || word == "WRONGPASS" || word == "NOPERM") return RedisErrorKind::kAuth;
  if (word == "MOVED") return RedisErrorKind::kMoved;
  if (word == "ASK") return RedisErrorKind::kAsk;
  if (word == "READONLY") return RedisErrorKind::kReadOnly;
  if (word == "LOADING") return RedisErrorKind::kLoading;
  if (word == "TRYAGAIN" || word == "MASTERDOWN") return RedisErrorKind::kTryAgain;
  if (word == "CLUSTERDOWN") return RedisErrorKind::kClusterDown;
  // Redis < 6 answered a wrong password with "ERR invalid password".
  if (word == "ERR" &&
      absl::StrContains(absl::AsciiStrToLower(AbslView(message)), "invalid password")) {
    return RedisErrorKind::kAuth;
  }
  return RedisErrorKind::kOther;
}

RedisErrorKind ClassifyReply(const RedisReply& reply) {
  if (!reply.is_error()) return RedisErrorKind::kNone;
  const RedisErrorKind kind = ClassifyReplyError(reply.str());
  // An empty error message is still an error.
  return kind == RedisErrorKind::kNone ? RedisErrorKind::kOther : kind;
}

std::optional<RedisRedirect> ParseRedirect(std::string_view message) {
  RedisRedirect redirect;
  redirect.kind = ClassifyReplyError(message);
  if (redirect.kind != RedisErrorKind::kMoved && redirect.kind != RedisErrorKind::kAsk) {
    return std::nullopt;
  }
  // "MOVED 3999 127.0.0.1:6381": the word, the slot, the address; nothing after it.
  std::string_view rest = message.substr(message.find(' ') + 1);
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos ||
      !absl::SimpleAtoi(AbslView(rest.substr(0, space)), &redirect.slot) || redirect.slot < 0 ||
      redirect.slot >= 16384) {
    return std::nullopt;
  }
  std::string_view address = rest.substr(space + 1);
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || address.find(' ') != std::string_view::npos ||
      !absl::SimpleAtoi(AbslView(address.substr(colon + 1)), &redirect.port) ||
      redirect.port <= 0 || redirect.port > 65535) {
    return std::nullopt;
  }
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  redirect.host = std::string(host);
  return redirect;
}

bool IsTransientReplyError(RedisErrorKind kind) {
  switch (kind) {
    case RedisErrorKind::kBusy:
    case RedisErrorKind::kOom:
    case RedisErrorKind::kMoved:
    case RedisErrorKind::kAsk:
    case RedisErrorKind::kReadOnly:
    case RedisErrorKind::kLoading:
    case RedisErrorKind::kTryAgain:
    case RedisErrorKind::kClusterDown:
      return true;
    default:
      return false;
  }
}

absl::Status ReplyErrorToStatus(std::string_view context, const RedisReply& reply) {
  const RedisErrorKind kind = ClassifyReply(reply);
  std::string message = absl::StrCat("redis ", AbslView(context), ": ", reply.str());
  if (IsTransientReplyError(kind)) return absl::UnavailableError(message);
  if (kind == RedisErrorKind::kAuth) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

absl::Status TransportError(std::string_view endpoint, std::string_view what,
                            const boost::system::error_code& ec) {
  return absl::UnavailableError(absl::StrCat("redis ", AbslView(endpoint), ": ", AbslView(what),
                                             " failed (", Reason(ec), ")"));
}

bool IsConnectionClosed(const boost::system::error_code& ec) {
  namespace error = boost::asio::error;
  return ec == error::eof || ec == error::connection_reset || ec == error::broken_pipe ||
         ec == error::connection_aborted || ec == boost::asio::ssl::error::stream_truncated;
}

absl::Status CommandTimeoutError(std::string_view command, std::chrono::milliseconds timeout,
                                 bool sent) {
  return absl::DeadlineExceededError(absl::StrCat("redis ", AbslView(command), ": timed out after ",
                                                  timeout.count(), "ms",
                                                  sent ? "" : "; never sent"));
}

absl::Status CommandLostError(std::string_view command, const absl::Status& cause) {
  return absl::UnavailableError(absl::StrCat("redis ", AbslView(command),
                                             ": connection lost after the command was sent; "
                                             "outcome unknown: ",
                                             cause.message()));
}

absl::Status NotConnectedError(std::string_view command, std::string_view endpoint,
                               const absl::Status& cause) {
  return absl::UnavailableError(absl::StrCat("redis ", AbslView(command), ": not connected to ",
                                             AbslView(endpoint), cause.ok() ? "" : ": ",
                                             cause.message()));
}

std::string_view CommandName(std::string_view resp) {
  // "*<argc>\r\n$<len>\r\n<name>\r\n..."
  constexpr std::string_view kUnknown = "command";
  const size_t first = resp.find("\r\n");
  if (resp.empty() || resp[0] != '*' || first == std::string_view::npos) return kUnknown;
  std::string_view rest = resp.substr(first + 2);
  const size_t second = rest.find("\r\n");
  size_t len = 0;
  if (rest.empty() || rest[0] != '$' || second == std::string_view::npos ||
      !absl::SimpleAtoi(AbslView(rest.substr(1, second - 1)), &len)) {
    return kUnknown;
  }
  rest = rest.substr(second + 2);
  if (rest.size() < len) return kUnknown;
  return rest.substr(0, len);
}

}  // namespace sluice
