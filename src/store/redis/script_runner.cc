#include "src/store/redis/script_runner.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include "src/store/redis/redis_error.h"

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

ScriptRunner::ScriptRunner(std::weak_ptr<RedisClient> client, const ScriptRunnerOptions& options)
    : client_(std::move(client)),
      timeout_(options.timeout),
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
      noscript_resends_(std::make_shared<std::atomic<uint64_t>>(0)) {}

void ScriptRunner::Run(const LuaScript& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args, RedisClient::ReplyCallback done) {
  runs_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<RedisClient> client = client_.lock();
  if (client == nullptr) {
    std::move(done)(absl::UnavailableError("redis EVALSHA: the store is shutting down"));
    return;
  }
  std::vector<std::string> argv = ScriptArgv("EVALSHA", script.sha1, keys, args);
  RedisCommand command = RedisCommand::Format(argv);
  const auto deadline = clock_.Now() + timeout_;
  client->Send(
      std::move(command), timeout_,
      [weak_client = client_, &clock = clock_, deadline, timeout = timeout_, &script,
       argv = std::move(argv), resends = noscript_resends_,
       done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
        // Anything but NOSCRIPT (a reply, another error reply, a transport failure or a timeout)
        // is final: only NOSCRIPT proves that the script did not run.
        if (!reply.ok() || !IsNoScript(*reply)) {
          std::move(done)(std::move(reply));
          return;
        }
        std::shared_ptr<RedisClient> client = weak_client.lock();
        if (client == nullptr) {
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
        client->Send(RedisCommand::Format(argv), left, std::move(done));
      });
}

void ScriptRunner::Preload(const LuaScript& script,
                           absl::AnyInvocable<void(absl::Status) &&> done) {
  std::shared_ptr<RedisClient> client = client_.lock();
  if (client == nullptr) {
    std::move(done)(absl::UnavailableError("redis SCRIPT LOAD: the store is shutting down"));
    return;
  }
  client->Send(RedisCommand::Format({"SCRIPT", "LOAD", script.text}), timeout_,
               [&script, done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
                 if (!reply.ok()) {
                   std::move(done)(reply.status());
                 } else if (reply->is_error()) {
                   std::move(done)(ReplyErrorToStatus("SCRIPT LOAD", *reply));
                 } else if (reply->str() != script.sha1) {
                   // A proxy or server that hashes differently would make every EVALSHA miss.
                   std::move(done)(absl::InternalError(
                       absl::StrCat("redis SCRIPT LOAD ", script.name, ": server named it ",
                                    reply->DebugString(), ", expected ", script.sha1)));
                 } else {
                   std::move(done)(absl::OkStatus());
                 }
               });
}

ScriptRunnerStats ScriptRunner::Stats() const {
  return ScriptRunnerStats{.runs = runs_.load(std::memory_order_relaxed),
                           .noscript_resends = noscript_resends_->load(std::memory_order_relaxed)};
}

}  // namespace sluice
