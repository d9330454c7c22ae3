#include "src/store/redis/script_runner.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

#include "src/store/redis/client/redis_error.h"
#include "src/util/strings.h"

namespace sluice {
namespace {

using internal::AbslView;
using std::chrono::milliseconds;

// The least time worth a resend: with less, it could only add a timeout error.
constexpr milliseconds kMinResendTimeout{1};

std::vector<std::string> ScriptArgv(const std::vector<std::string>& keys,
                                    const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back();  // the command: FCALL, EVALSHA or EVAL
  argv.emplace_back();  // the function, SHA1 or text
  argv.push_back(absl::StrCat(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The replies that prove a call did not run, besides NOSCRIPT (redis_error.h). They are all
// "ERR ..." replies, told apart by their text, which Redis has kept since functions came (7.0).

// FCALL of a function the server does not have (its library was never loaded there, or flushed).
bool IsFunctionNotFound(const RedisReply& r) {
  return r.is_error() && absl::StrContains(AbslView(r.str()), "Function not found");
}

// A server that does not know the command: FCALL or FUNCTION before Redis 7.0.
bool IsUnknownCommand(const RedisReply& r) {
  return r.is_error() && absl::StartsWithIgnoreCase(AbslView(r.str()), "ERR unknown command");
}

// FUNCTION LOAD of a library the server has already (another client loaded it first).
bool IsLibraryLoaded(const RedisReply& r) {
  return r.is_error() && absl::StrContains(AbslView(r.str()), "already exists");
}

}  // namespace

struct ScriptRunner::Call {
  std::weak_ptr<RedisRouter> router;
  std::shared_ptr<Shared> shared;
  Durability durability;
  Clock* clock = nullptr;
  std::chrono::steady_clock::time_point deadline{};
  milliseconds timeout{0};
  const LuaScript* script = nullptr;
  // Every key of a call shares a slot; the first one routes it, whatever the command.
  std::string route_key;
  // {command, function / SHA1 / text, numkeys, keys..., args...}
  std::vector<std::string> argv;
  RedisRouter::ReplyCallback done;
};

void ScriptRunner::Shared::DisableFunctions(std::string_view why) {
  if (functions.exchange(false, std::memory_order_relaxed)) {
    spdlog::warn("redis: {}; running the scripts with EVALSHA from now on", why);
  }
}

ScriptRunner::ScriptRunner(std::weak_ptr<RedisRouter> router, const ScriptRunnerOptions& options)
    : router_(std::move(router)),
      timeout_(options.timeout),
      durability_{.min_replicas = options.min_replicas, .timeout = options.min_replicas_timeout},
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
      shared_(std::make_shared<Shared>(options.use_functions)) {}

void ScriptRunner::Run(const LuaScript& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args, RedisRouter::ReplyCallback done) {
  runs_.fetch_add(1, std::memory_order_relaxed);
  const bool fcall =
      script.library != nullptr && shared_->functions.load(std::memory_order_relaxed);
  std::shared_ptr<RedisRouter> router = router_.lock();
  if (router == nullptr) {
    std::move(done)(absl::UnavailableError(
        absl::StrCat("redis ", fcall ? "FCALL" : "EVALSHA", ": the store is shutting down")));
    return;
  }
  auto call = std::make_unique<Call>(Call{.router = router_,
                                          .shared = shared_,
                                          .durability = durability_,
                                          .clock = &clock_,
                                          .deadline = clock_.Now() + timeout_,
                                          .timeout = timeout_,
                                          .script = &script,
                                          .route_key = keys.empty() ? std::string() : keys.front(),
                                          .argv = ScriptArgv(keys, args),
                                          .done = std::move(done)});
  if (fcall) {
    SendFcall(std::move(call), router);
  } else {
    SendEvalsha(std::move(call), router);
  }
}

void ScriptRunner::SendFcall(std::unique_ptr<Call> call,
                             const std::shared_ptr<RedisRouter>& router) {
  call->argv[0] = "FCALL";
  call->argv[1] = call->script->function;
  RedisCommand command = MakeCall(call->argv, call->durability);
  const std::string route_key = call->route_key;
  const milliseconds timeout = call->timeout;
  router->Route(std::move(command), route_key, timeout,
                [call = std::move(call)](absl::StatusOr<RedisReply> reply) mutable {
                  OnFcallReply(std::move(call), std::move(reply));
                });
}

void ScriptRunner::SendEvalsha(std::unique_ptr<Call> call,
                               const std::shared_ptr<RedisRouter>& router) {
  call->argv[0] = "EVALSHA";
  call->argv[1] = call->script->sha1;
  RedisCommand command = MakeCall(call->argv, call->durability);
  const std::string route_key = call->route_key;
  const milliseconds timeout = call->timeout;
  router->Route(std::move(command), route_key, timeout,
                [call = std::move(call)](absl::StatusOr<RedisReply> reply) mutable {
                  OnEvalshaReply(std::move(call), std::move(reply));
                });
}

void ScriptRunner::OnFcallReply(std::unique_ptr<Call> call, absl::StatusOr<RedisReply> reply) {
  const RedisReply* script_reply = reply.ok() ? ScriptReplyOf(*reply, call->durability) : nullptr;
  if (script_reply == nullptr) {
    // A transport failure or a timeout (the call may have run), or a malformed pipeline reply:
    // final.
    return Finish(std::move(call), std::move(reply));
  }
  if (IsFunctionNotFound(*script_reply)) {
    // The server lacks the library (new, restarted without persistence, or flushed): resend
    // the call as EVAL, which runs it whatever happens meanwhile (a FUNCTION LOAD and an FCALL
    // would be two commands, and another flush could come between them), and load the library
    // for the next calls. Functions are replicated, so this does not recur after a failover.
    LoadLibrary(*call);
    ResendAsEval(std::move(call));
  } else if (IsUnknownCommand(*script_reply)) {
    // A server before Redis 7.0: it has no functions, now or later.
    call->shared->DisableFunctions(absl::StrCat("FCALL refused: ", script_reply->str()));
    ResendAsEval(std::move(call));
  } else if (IsOom(*script_reply)) {
    // Under maxmemory Redis refuses a function that may write before it runs; an EVAL script
    // runs, and fails only at its first write (a peek, which writes nothing, still answers).
    ResendAsEval(std::move(call));
  } else {
    // A reply, or an error of the function itself: final.
    Finish(std::move(call), std::move(reply));
  }
}

void ScriptRunner::OnEvalshaReply(std::unique_ptr<Call> call, absl::StatusOr<RedisReply> reply) {
  // Anything but NOSCRIPT (a reply, another error reply, a transport failure or a timeout) is
  // final: only NOSCRIPT proves that the script did not run.
  const RedisReply* script_reply = reply.ok() ? ScriptReplyOf(*reply, call->durability) : nullptr;
  if (script_reply == nullptr || !IsNoScript(*script_reply)) {
    Finish(std::move(call), std::move(reply));
    return;
  }
  ResendAsEval(std::move(call));
}

bool ScriptRunner::HasTimeForResend(const Call& call, milliseconds& left) {
  left = std::chrono::duration_cast<milliseconds>(call.deadline - call.clock->Now());
  return left >= kMinResendTimeout;
}

void ScriptRunner::LoadLibrary(const Call& call) {
  std::shared_ptr<RedisRouter> router = call.router.lock();
  // One load at a time: the calls that fail meanwhile are resent as EVAL all the same.
  if (router == nullptr || call.shared->loading.exchange(true, std::memory_order_relaxed)) return;
  // To the server of the call's key: on a Cluster each primary has its own functions (its
  // replicas get them from it).
  router->Route(RedisCommand::Format({"FUNCTION", "LOAD", call.script->library->text}),
                call.route_key, call.timeout,
                [shared = call.shared](absl::StatusOr<RedisReply> reply) {
                  if (reply.ok() && (IsUnknownCommand(*reply) || IsAuthError(*reply))) {
                    // No functions there, or an ACL that does not allow loading them.
                    shared->DisableFunctions(absl::StrCat("FUNCTION LOAD refused: ", reply->str()));
                  }
                  // Anything else (loaded, loaded by another client first, a transport error):
                  // the next call that misses the library loads it again.
                  shared->loading.store(false, std::memory_order_relaxed);
                });
}

void ScriptRunner::ResendAsEval(std::unique_ptr<Call> call) {
  std::shared_ptr<RedisRouter> router = call->router.lock();
  milliseconds left{0};
  if (router == nullptr) {
    Finish(std::move(call), absl::UnavailableError("redis EVAL: the store is shutting down"));
    return;
  }
  if (!HasTimeForResend(*call, left)) {
    // The call did not run and there is no time left to run it.
    absl::Status timed_out = CommandTimeoutError(call->argv[0], call->timeout);
    Finish(std::move(call), std::move(timed_out));
    return;
  }
  call->shared->resends.fetch_add(1, std::memory_order_relaxed);
  // The one resend: EVAL with the text runs the script (and caches it), whatever the server's
  // script cache and functions; its reply, whatever it is, is final.
  call->argv[0] = "EVAL";
  call->argv[1] = std::string(call->script->text);
  RedisCommand command = MakeCall(call->argv, call->durability);
  const std::string route_key = call->route_key;
  router->Route(std::move(command), route_key, left,
                [call = std::move(call)](absl::StatusOr<RedisReply> reply) mutable {
                  Finish(std::move(call), std::move(reply));
                });
}

void ScriptRunner::Finish(std::unique_ptr<Call> call, absl::StatusOr<RedisReply> reply) {
  absl::StatusOr<RedisReply> outcome = FinishCall(std::move(reply), call->durability);
  std::move(call->done)(std::move(outcome));
}

RedisCommand ScriptRunner::MakeCall(const std::vector<std::string>& argv,
                                    const Durability& durability) {
  RedisCommand call = RedisCommand::Format(argv);
  if (durability.min_replicas <= 0) return call;
  // WAIT covers every write its connection made before it; in one pipeline nothing can come
  // between the script and its WAIT, and the pair goes to the script's server.
  std::vector<RedisCommand> pair;
  pair.push_back(std::move(call));
  pair.push_back(RedisCommand::Format(
      {"WAIT", absl::StrCat(durability.min_replicas), absl::StrCat(durability.timeout.count())}));
  return RedisCommand::Pipeline(pair);
}

const RedisReply* ScriptRunner::ScriptReplyOf(const RedisReply& reply,
                                              const Durability& durability) {
  if (durability.min_replicas <= 0) return &reply;
  if (!reply.is_array() || reply.elements().size() != 2) return nullptr;
  return &reply.elements()[0];
}

absl::StatusOr<RedisReply> ScriptRunner::FinishCall(absl::StatusOr<RedisReply> reply,
                                                    const Durability& durability) {
  if (!reply.ok() || durability.min_replicas <= 0) return reply;
  if (!reply->is_array() || reply->elements().size() != 2) {
    return absl::InternalError(
        absl::StrCat("redis script+WAIT: expected two replies, got ", reply->DebugString()));
  }
  RedisReply script_reply = std::move(reply->mutable_elements()[0]);
  const RedisReply& wait_reply = reply->elements()[1];
  // A script that failed wrote nothing: its error stands, whatever WAIT says.
  if (script_reply.is_error()) return script_reply;
  if (!wait_reply.is_integer()) {
    return absl::UnavailableError(absl::StrCat("redis WAIT: ", wait_reply.DebugString(),
                                               "; the decision was recorded on the primary only"));
  }
  if (wait_reply.integer() < durability.min_replicas) {
    // The decision stands on the primary but may not survive a failover: the caller's failure
    // policy answers instead (docs/redis.md, "Durability").
    return absl::UnavailableError(
        absl::StrCat("redis WAIT: ", wait_reply.integer(), " of ", durability.min_replicas,
                     " replicas acknowledged within ", durability.timeout.count(),
                     "ms; the decision was recorded on the primary only"));
  }
  return script_reply;
}

void ScriptRunner::PrepareOn(
    const std::shared_ptr<RedisClient>& client, std::span<const LuaScript* const> scripts,
    const std::function<void(std::string_view name, absl::Status)>& done) const {
  const LuaLibrary* library = scripts.front()->library;
  const milliseconds timeout = timeout_;
  auto load_scripts = [scripts, timeout, done](RedisClient& server) {
    for (const LuaScript* script : scripts) {
      ScriptLoadOn(server, *script, timeout,
                   [name = script->name, done](absl::Status s) { done(name, std::move(s)); });
    }
  };
  if (library == nullptr || !shared_->functions.load(std::memory_order_relaxed)) {
    load_scripts(*client);
    return;
  }
  client->Send(RedisCommand::Format({"FUNCTION", "LOAD", library->text}), timeout_,
               [library, shared = shared_, weak_client = std::weak_ptr<RedisClient>(client),
                load_scripts, done](absl::StatusOr<RedisReply> reply) {
                 if (!reply.ok()) {
                   done(library->name, reply.status());
                 } else if (IsUnknownCommand(*reply) || IsAuthError(*reply)) {
                   // No functions here (before Redis 7.0), or an ACL that does not allow loading
                   // them: calls run as scripts, which this server gets instead.
                   shared->DisableFunctions(absl::StrCat("FUNCTION LOAD refused: ", reply->str()));
                   if (std::shared_ptr<RedisClient> server = weak_client.lock()) {
                     load_scripts(*server);
                   }
                 } else if (IsLibraryLoaded(*reply) ||
                            (!reply->is_error() && reply->str() == library->name)) {
                   done(library->name, absl::OkStatus());
                 } else if (reply->is_error()) {
                   done(library->name, ReplyErrorToStatus("FUNCTION LOAD", *reply));
                 } else {
                   done(library->name, absl::InternalError(absl::StrCat(
                                           "redis FUNCTION LOAD: server named the library ",
                                           reply->DebugString(), ", expected ", library->name)));
                 }
               });
}

void ScriptRunner::Preload(const LuaScript& script, const std::function<void(absl::Status)>& done) {
  std::shared_ptr<RedisRouter> router = router_.lock();
  if (router == nullptr) {
    done(absl::UnavailableError("redis SCRIPT LOAD: the store is shutting down"));
    return;
  }
  for (const std::shared_ptr<RedisClient>& client : router->Primaries()) {
    PreloadOn(*client, script, done);
  }
}

void ScriptRunner::PreloadOn(RedisClient& client, const LuaScript& script,
                             std::function<void(absl::Status)> done) const {
  ScriptLoadOn(client, script, timeout_, std::move(done));
}

void ScriptRunner::ScriptLoadOn(RedisClient& client, const LuaScript& script, milliseconds timeout,
                                std::function<void(absl::Status)> done) {
  client.Send(RedisCommand::Format({"SCRIPT", "LOAD", script.text}), timeout,
              [&script, done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
                if (!reply.ok()) {
                  done(reply.status());
                } else if (reply->is_error()) {
                  done(ReplyErrorToStatus("SCRIPT LOAD", *reply));
                } else if (reply->str() != script.sha1) {
                  // A proxy or server that hashes differently would make every EVALSHA miss.
                  done(absl::InternalError(absl::StrCat("redis SCRIPT LOAD ", script.name,
                                                        ": server named it ", reply->DebugString(),
                                                        ", expected ", script.sha1)));
                } else {
                  done(absl::OkStatus());
                }
              });
}

ScriptRunnerStats ScriptRunner::Stats() const {
  return ScriptRunnerStats{.runs = runs_.load(std::memory_order_relaxed),
                           .noscript_resends = shared_->resends.load(std::memory_order_relaxed),
                           .functions = shared_->functions.load(std::memory_order_relaxed)};
}

}  // namespace sluice
