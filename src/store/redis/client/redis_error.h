// Redis errors, classified in one place.
//
// Two families:
//  - Transport failures (socket, TLS, timeouts, protocol) become an absl::Status with context:
//      Unavailable       cannot connect, connection lost, not connected, client shut down
//      DeadlineExceeded  a command missed its deadline (outcome unknown; never resent)
//      Internal          protocol violations (unparsable bytes, a reply nobody asked for)
//      PermissionDenied  the server refused our credentials during connect (AUTH, NOAUTH)
//      InvalidArgument   the server refused our connection settings (SELECT out of range)
//  - Error replies ("-NOSCRIPT ...") stay values (RedisReply::is_error()); ClassifyReplyError()
//    names them and ReplyErrorToStatus() maps them when a caller wants a Status.
//
// Messages read like "redis EVALSHA: timed out after 50ms" or
// "redis 10.0.0.5:6379: connection lost (Connection reset by peer)". They never contain
// credentials.
//
// Thread safety: stateless functions, thread-safe.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_ERROR_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_ERROR_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include <boost/system/error_code.hpp>

#include "src/store/redis/client/redis_reply.h"

namespace sluice {

// The first word of an error reply, for the errors a limiter must treat specially.
enum class RedisErrorKind : uint8_t {
  kNone,         // Not an error reply.
  kOther,        // ERR, WRONGTYPE, EXECABORT, ... : a bug in the caller or the script.
  kNoScript,     // NOSCRIPT: the script cache lacks the SHA; SCRIPT LOAD and retry once.
  kBusy,         // BUSY: another script is running past lua-time-limit.
  kOom,          // OOM: maxmemory reached under noeviction.
  kAuth,         // NOAUTH, WRONGPASS, NOPERM: credentials missing, wrong or insufficient.
  kMoved,        // MOVED slot host:port: the key lives on another cluster node.
  kAsk,          // ASK slot host:port: the slot is migrating.
  kReadOnly,     // READONLY: we are talking to a replica (failover in progress).
  kLoading,      // LOADING: the server is loading its dataset.
  kTryAgain,     // TRYAGAIN, MASTERDOWN: transient states (a multi-key command during resharding).
  kClusterDown,  // CLUSTERDOWN: the cluster cannot serve the slot now (failover, lost coverage).
};

// ClassifyReplyError()
//
// Returns the kind of an error reply's message ("NOSCRIPT No matching script..."); kNone for an
// empty message.
RedisErrorKind ClassifyReplyError(std::string_view message);

// ClassifyReply()
//
// Returns kNone for a non-error reply, else ClassifyReplyError(reply.str()).
RedisErrorKind ClassifyReply(const RedisReply& reply);

inline bool IsNoScript(const RedisReply& r) {
  return ClassifyReply(r) == RedisErrorKind::kNoScript;
}
inline bool IsBusy(const RedisReply& r) { return ClassifyReply(r) == RedisErrorKind::kBusy; }
inline bool IsOom(const RedisReply& r) { return ClassifyReply(r) == RedisErrorKind::kOom; }
inline bool IsAuthError(const RedisReply& r) { return ClassifyReply(r) == RedisErrorKind::kAuth; }
inline bool IsLoading(const RedisReply& r) { return ClassifyReply(r) == RedisErrorKind::kLoading; }
inline bool IsReadOnly(const RedisReply& r) {
  return ClassifyReply(r) == RedisErrorKind::kReadOnly;
}
inline bool IsRedirect(const RedisReply& r) {
  const RedisErrorKind kind = ClassifyReply(r);
  return kind == RedisErrorKind::kMoved || kind == RedisErrorKind::kAsk;
}

// A MOVED or ASK error reply, parsed: which node serves the slot now.
struct RedisRedirect {
  RedisErrorKind kind = RedisErrorKind::kNone;  // kMoved or kAsk.
  int slot = 0;
  // Empty when the server does not know its peer's address ("MOVED 3999 :6380"): the host the
  // command was sent to.
  std::string host = {};
  int port = 0;
};

// ParseRedirect()
//
// Returns the redirect of "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>" (an IPv6
// host may be bare, "::1:6380", or bracketed); nullopt for any other message or a malformed one.
std::optional<RedisRedirect> ParseRedirect(std::string_view message);

// IsTransientReplyError()
//
// True for error replies that say "the server cannot serve this now" rather than "this command is
// wrong": BUSY, OOM, LOADING, READONLY, MOVED/ASK (when not followed), TRYAGAIN, CLUSTERDOWN.
bool IsTransientReplyError(RedisErrorKind kind);

// ReplyErrorToStatus()
//
// Returns the Status for an error reply, for callers that do not handle it themselves:
// Unavailable for transient kinds (IsTransientReplyError()), PermissionDenied for kAuth, and
// Internal otherwise (including NOSCRIPT, which a script runner must have handled).
// `context` names the command ("EVALSHA"); the message keeps the server's text.
// REQUIRES: reply.is_error().
absl::Status ReplyErrorToStatus(std::string_view context, const RedisReply& reply);

// TransportError()
//
// Returns the Status for a failed socket or TLS operation on the connection to `endpoint`
// ("10.0.0.5:6379") while doing `what` ("connect", "read", ...): Unavailable, with the OS or
// OpenSSL reason.
absl::Status TransportError(std::string_view endpoint, std::string_view what,
                            const boost::system::error_code& ec);

// IsConnectionClosed()
//
// True when `ec` means the peer closed or reset the connection (EOF, reset, broken pipe, TLS
// truncation), as opposed to a local or network failure.
bool IsConnectionClosed(const boost::system::error_code& ec);

// CommandTimeoutError()
//
// Returns DeadlineExceeded("redis EVALSHA: timed out after 50ms"). When `sent` is false the
// command never left the client, which the message says ("...; never sent").
absl::Status CommandTimeoutError(std::string_view command, std::chrono::milliseconds timeout,
                                 bool sent = true);

// CommandLostError()
//
// Returns Unavailable for a command that was written before its connection failed: the server may
// or may not have run it ("redis EVALSHA: connection lost after the command was sent; outcome
// unknown: <cause>").
absl::Status CommandLostError(std::string_view command, const absl::Status& cause);

// NotConnectedError()
//
// Returns Unavailable for a command refused without being sent ("redis EVALSHA: not connected to
// 10.0.0.5:6379: <cause>").
absl::Status NotConnectedError(std::string_view command, std::string_view endpoint,
                               const absl::Status& cause);

// CommandName()
//
// Returns the command name of a RESP-formatted command ("*3\r\n$7\r\nEVALSHA\r\n..." gives
// "EVALSHA"), or "command" when it cannot be read. Used to give errors their context without
// storing a name per command.
std::string_view CommandName(std::string_view resp);

}  // namespace sluice

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_ERROR_H_
