#include "src/store/redis/script_runner.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include "src/store/redis/client/redis_error.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;

// The least time worth a resend: with less, it could only add a timeout error.
constexpr milliseconds kMinResendTimeout{1};

std::vector<std::string> ScriptArgv(std::string_view command, std::string_view script_ref,
                                    const std::vector<std::string>& keys,
                                    const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back(command);
  argv.emplace_back(script_ref);
  argv.push_back(absl::StrCat(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

ScriptRunner::ScriptRunner(std::weak_ptr<RedisRouter> router, const ScriptRunnerOptions& options)
    : router_(std::move(router)),
      timeout_(options.timeout),
      durability_{.min_replicas = options.min_replicas, .timeout = options.min_replicas_timeout},
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
      noscript_resends_(std::make_shared<std::atomic<uint64_t>>(0)) {}

void ScriptRunner::Run(const LuaScript& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args, RedisRouter::ReplyCallback done) {
  runs_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<RedisRouter> router = router_.lock();
  if (router == nullptr) {
    std::move(done)(absl::UnavailableError("redis EVALSHA: the store is shutting down"));
    return;
  }
  std::vector<std::string> argv = ScriptArgv("EVALSHA", script.sha1, keys, args);
  RedisCommand command = MakeCall(argv);
  const auto deadline = clock_.Now() + timeout_;
  // Every key of a call shares a slot; the first one routes it.
  std::string route_key = keys.empty() ? std::string() : keys.front();
  router->Route(
      std::move(command), route_key, timeout_,
      [this_durability = durability_, weak_router = router_, route_key, &clock = clock_, deadline,
       timeout = timeout_, &script, argv = std::move(argv), resends = noscript_resends_,
       done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
        // Anything but NOSCRIPT (a reply, another error reply, a transport failure or a timeout)
        // is final: only NOSCRIPT proves that the script did not run.
        const RedisReply* script_reply = reply.ok() ? ScriptReplyOf(*reply, this_durability) : nullptr;
        if (script_reply == nullptr || !IsNoScript(*script_reply)) {
          std::move(done)(FinishCall(std::move(reply), this_durability));
          return;
        }
        std::shared_ptr<RedisRouter> router = weak_router.lock();
        if (router == nullptr) {
          std::move(done)(absl::UnavailableError("redis EVAL: the store is shutting down"));
          return;
        }
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock.Now());
        if (left < kMinResendTimeout) {
          // The script did not run and there is no time left to run it.
          std::move(done)(CommandTimeoutError("EVALSHA", timeout));
          return;
        }
        resends->fetch_add(1, std::memory_order_relaxed);
        // The one resend: EVAL with the text runs the script and caches it again. EVAL cannot
        // answer NOSCRIPT, and its reply, whatever it is, is final.
        argv[0] = "EVAL";
        argv[1] = std::string(script.text);
        router->Route(MakeCall(argv, this_durability), route_key, left,
                      [this_durability, done = std::move(done)](
                          absl::StatusOr<RedisReply> reply) mutable {
                        std::move(done)(FinishCall(std::move(reply), this_durability));
                      });
      });
}

RedisCommand ScriptRunner::MakeCall(const std::vector<std::string>& argv) const {
  return MakeCall(argv, durability_);
}

RedisCommand ScriptRunner::MakeCall(const std::vector<std::string>& argv,
                                    const Durability& durability) {
  RedisCommand call = RedisCommand::Format(argv);
  if (durability.min_replicas <= 0) return call;
  // WAIT covers every write its connection made before it; in one pipeline nothing can come
  // between the script and its WAIT, and the pair goes to the script's server.
  std::vector<RedisCommand> pair;
  pair.push_back(std::move(call));
  pair.push_back(RedisCommand::Format({"WAIT", absl::StrCat(durability.min_replicas),
                                       absl::StrCat(durability.timeout.count())}));
  return RedisCommand::Pipeline(std::move(pair));
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
        absl::StrCat("redis EVALSHA+WAIT: expected two replies, got ", reply->DebugString()));
  }
  RedisReply script_reply = std::move(reply->mutable_elements()[0]);
  const RedisReply& wait_reply = reply->elements()[1];
  // A script that failed wrote nothing: its error stands, whatever WAIT says.
  if (script_reply.is_error()) return script_reply;
  if (!wait_reply.is_integer()) {
    return absl::UnavailableError(
        absl::StrCat("redis WAIT: ", wait_reply.DebugString(),
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

void ScriptRunner::Preload(const LuaScript& script,
                           const std::function<void(absl::Status)>& done) {
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
  client.Send(RedisCommand::Format({"SCRIPT", "LOAD", script.text}), timeout_,
               [&script, done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
                 if (!reply.ok()) {
                   done(reply.status());
                 } else if (reply->is_error()) {
                   done(ReplyErrorToStatus("SCRIPT LOAD", *reply));
                 } else if (reply->str() != script.sha1) {
                   // A proxy or server that hashes differently would make every EVALSHA miss.
                   done(absl::InternalError(
                       absl::StrCat("redis SCRIPT LOAD ", script.name, ": server named it ",
                                    reply->DebugString(), ", expected ", script.sha1)));
                 } else {
                   done(absl::OkStatus());
                 }
               });
}

ScriptRunnerStats ScriptRunner::Stats() const {
  return ScriptRunnerStats{.runs = runs_.load(std::memory_order_relaxed),
                           .noscript_resends = noscript_resends_->load(std::memory_order_relaxed)};
}

}  // namespace sluice
