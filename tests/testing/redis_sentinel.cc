#include "tests/testing/redis_sentinel.h"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include <hiredis/hiredis.h>
#include <sys/wait.h>

namespace sluice::testing {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// Runs one command on 127.0.0.1:`port` with a blocking hiredis client, after AUTH when
// `password` is set. Returns the reply (error replies included), or Unavailable.
absl::StatusOr<Reply> Call(int port, const std::string& password,
                           const std::vector<std::string>& argv) {
  timeval timeout{1, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeout);
  if (c == nullptr || c->err != 0) {
    std::string err = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    return absl::UnavailableError(absl::StrCat("127.0.0.1:", port, ": ", err));
  }
  redisSetTimeout(c, timeout);
  if (!password.empty()) {
    Reply auth(static_cast<redisReply*>(redisCommand(c, "AUTH %s", password.c_str())));
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  Reply reply(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data())));
  std::string err = c->errstr;
  redisFree(c);
  if (reply == nullptr) return absl::UnavailableError(absl::StrCat("127.0.0.1:", port, ": ", err));
  return reply;
}

std::string Str(const redisReply* r) {
  if (r->type == REDIS_REPLY_INTEGER) return absl::StrCat(r->integer);
  if (r->str == nullptr) return "";
  return {r->str, r->len};
}

// A flat array of field, value, field, value... (SENTINEL MASTER, one entry of SENTINEL
// REPLICAS) as a map.
std::map<std::string, std::string> FieldMap(const redisReply* r) {
  std::map<std::string, std::string> out;
  if (r->type != REDIS_REPLY_ARRAY) return out;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    out[Str(r->element[i])] = Str(r->element[i + 1]);
  }
  return out;
}

std::string InfoField(const std::string& info, absl::string_view field) {
  for (absl::string_view line : absl::StrSplit(info, absl::ByAnyChar("\r\n"), absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, field) && absl::ConsumePrefix(&line, ":")) {
      return std::string(line);
    }
  }
  return "";
}

// Polls `check` every 50 ms until it returns OK or `timeout` passes; returns its last status.
// Real time is the only clock here: these are other processes' timers.
absl::Status PollUntil(std::chrono::milliseconds timeout,
                       const std::function<absl::Status()>& check) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  absl::Status last = check();
  while (!last.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    last = check();
  }
  return last;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisSentinel>> RedisSentinel::Start(const Options& options) {
  if (options.sentinels < 1 || options.quorum < 1 || options.quorum > options.sentinels) {
    return absl::InvalidArgumentError("RedisSentinel: needs 1 <= quorum <= sentinels");
  }
  std::unique_ptr<RedisSentinel> fixture(new RedisSentinel(options));
  if (absl::Status started = fixture->StartServers(); !started.ok()) return started;
  if (absl::Status started = fixture->StartSentinels(); !started.ok()) return started;
  if (absl::Status healthy = fixture->WaitUntilHealthy(); !healthy.ok()) return healthy;
  return fixture;
}

RedisSentinel::~RedisSentinel() {
  for (SentinelProcess& s : sentinels_) {
    StopProcess(s.pid);
    std::error_code ignored;
    std::filesystem::remove_all(s.dir, ignored);
  }
  // Each RedisServer kills its own process.
}

void RedisSentinel::StopProcess(pid_t& pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  pid = -1;
}

absl::Status RedisSentinel::StartServers() {
  RedisServer::Options server_options{.config = {
                                          // The replica syncs at once, not after 5 s.
                                          {"repl-diskless-sync-delay", "0"},
                                      }};
  if (!options_.data_password.empty()) {
    server_options.config.emplace_back("requirepass", options_.data_password);
    // Either server may become a replica of the other after a failover.
    server_options.config.emplace_back("masterauth", options_.data_password);
  }
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::Start(server_options);
    if (!server.ok()) return server.status();
    servers_.push_back(*std::move(server));
  }
  primary_port_ = servers_[0]->port();
  // REPLICAOF at run time: redis-server quotes each command-line argument, so "--replicaof" cannot
  // take the host and the port as two words.
  absl::StatusOr<std::string> replicaof =
      servers_[1]->Command({"REPLICAOF", "127.0.0.1", absl::StrCat(primary_port_)});
  if (!replicaof.ok()) return replicaof.status();
  if (*replicaof != "OK") return absl::UnavailableError(absl::StrCat("REPLICAOF: ", *replicaof));
  // A Sentinel learns replicas from the primary's INFO, which it asks for when it connects and
  // then only every 10 s: the replica must be attached before the Sentinels start.
  return PollUntil(std::chrono::seconds(10), [&]() -> absl::Status {
    absl::StatusOr<std::string> info = servers_[1]->Command({"INFO", "replication"});
    if (!info.ok()) return info.status();
    if (InfoField(*info, "master_link_status") != "up") {
      return absl::UnavailableError("the replica never synced with the primary");
    }
    absl::StatusOr<std::string> primary = servers_[0]->Command({"INFO", "replication"});
    if (!primary.ok()) return primary.status();
    if (InfoField(*primary, "connected_slaves") != "1") {
      return absl::UnavailableError("the primary does not list its replica");
    }
    return absl::OkStatus();
  });
}

absl::Status RedisSentinel::StartSentinels() {
  for (int i = 0; i < options_.sentinels; ++i) {
    absl::Status last;
    bool started = false;
    // A port can be taken between FreeLoopbackPort() and the Sentinel binding it: a few tries.
    for (int attempt = 0; attempt < 3 && !started; ++attempt) {
      absl::StatusOr<int> port = FreeLoopbackPort();
      if (!port.ok()) return port.status();
      std::string dir =
          (std::filesystem::temp_directory_path() / "sluice-sentinel-XXXXXX").string();
      if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("mkdtemp failed");
      SentinelProcess sentinel{.port = *port, .dir = dir};
      last = StartSentinel(sentinel);
      if (last.ok()) {
        sentinels_.push_back(std::move(sentinel));
        started = true;
      } else {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
      }
    }
    if (!started) return last;
  }
  return absl::OkStatus();
}

absl::Status RedisSentinel::StartSentinel(SentinelProcess& sentinel) const {
  const std::string& name = options_.primary_name;
  // The Sentinel rewrites its configuration file (it records what it learns), so it gets its own
  // writable copy in its own directory.
  const std::string conf = sentinel.dir + "/sentinel.conf";
  {
    std::ofstream out(conf);
    out << "port " << sentinel.port << "\n"
        << "bind 127.0.0.1\n"
        << "daemonize no\n"
        << "dir " << sentinel.dir << "\n"
        << "logfile " << sentinel.dir << "/sentinel.log\n"
        << "sentinel monitor " << name << " 127.0.0.1 " << primary_port_ << " " << options_.quorum
        << "\n"
        << "sentinel down-after-milliseconds " << name << " " << options_.down_after.count() << "\n"
        << "sentinel failover-timeout " << name << " " << options_.failover_timeout.count() << "\n"
        << "sentinel parallel-syncs " << name << " 1\n";
    if (!options_.data_password.empty()) {
      out << "sentinel auth-pass " << name << " " << options_.data_password << "\n";
    }
    if (!options_.sentinel_password.empty()) {
      out << "requirepass " << options_.sentinel_password << "\n"
          << "sentinel sentinel-pass " << options_.sentinel_password << "\n";
    }
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", conf));
  }
  absl::StatusOr<pid_t> pid = SpawnTiedToParent({"redis-sentinel", conf});
  if (!pid.ok()) return pid.status();
  sentinel.pid = *pid;
  absl::Status up = PollUntil(std::chrono::seconds(10), [&]() -> absl::Status {
    int status = 0;
    if (waitpid(sentinel.pid, &status, WNOHANG) == sentinel.pid) {
      sentinel.pid = -1;
      return absl::CancelledError(
          absl::StrCat("redis-sentinel exited at start on port ", sentinel.port));
    }
    absl::StatusOr<Reply> pong = Call(sentinel.port, options_.sentinel_password, {"PING"});
    if (!pong.ok()) return pong.status();
    return Str(pong->get()) == "PONG" ? absl::OkStatus() : absl::UnavailableError(Str(pong->get()));
  });
  if (!up.ok()) {
    StopProcess(sentinel.pid);
    return absl::UnavailableError(
        absl::StrCat("redis-sentinel on port ", sentinel.port, " never answered: ", up.message()));
  }
  return absl::OkStatus();
}

std::string RedisSentinel::Url() const {
  std::vector<std::string> hosts;
  for (const SentinelProcess& s : sentinels_) hosts.push_back(absl::StrCat("127.0.0.1:", s.port));
  // The test passwords are plain words: nothing to percent-encode.
  std::string url = absl::StrCat(
      "redis-sentinel://",
      options_.data_password.empty() ? "" : absl::StrCat(":", options_.data_password, "@"),
      absl::StrJoin(hosts, ","), "/", options_.primary_name);
  if (!options_.sentinel_password.empty()) {
    absl::StrAppend(&url, "?sentinel_password=", options_.sentinel_password);
  }
  return url;
}

int RedisSentinel::replica_port() const {
  return servers_[0]->port() == primary_port_ ? servers_[1]->port() : servers_[0]->port();
}

std::vector<int> RedisSentinel::sentinel_ports() const {
  std::vector<int> ports;
  for (const SentinelProcess& s : sentinels_) ports.push_back(s.port);
  return ports;
}

RedisServer& RedisSentinel::Server(int port) {
  for (auto& server : servers_) {
    if (server->port() == port) return *server;
  }
  std::abort();  // REQUIRES violated: not a data server of this fixture.
}

void RedisSentinel::KillPrimary() { Server(primary_port_).Kill(); }

absl::Status RedisSentinel::DetachReplica() {
  // First the replica, so that it cannot reconnect: its AUTH to the primary now fails, with or
  // without a password on the primary.
  absl::StatusOr<std::string> set =
      Server(replica_port()).Command({"CONFIG", "SET", "masterauth", "detached-by-the-test"});
  if (!set.ok()) return set.status();
  if (*set != "OK") return absl::UnavailableError(absl::StrCat("CONFIG SET masterauth: ", *set));
  absl::StatusOr<std::string> killed =
      Server(primary_port_).Command({"CLIENT", "KILL", "TYPE", "replica"});
  if (!killed.ok()) return killed.status();
  if (*killed != "1") {
    return absl::UnavailableError(absl::StrCat("CLIENT KILL TYPE replica: ", *killed));
  }
  return absl::OkStatus();
}

void RedisSentinel::KillSentinel(size_t index) { StopProcess(sentinels_.at(index).pid); }

absl::StatusOr<std::string> RedisSentinel::SentinelCommand(
    size_t index, const std::vector<std::string>& argv) const {
  absl::StatusOr<Reply> reply = Call(sentinels_.at(index).port, options_.sentinel_password, argv);
  if (!reply.ok()) return reply.status();
  const redisReply* r = reply->get();
  if (r->type == REDIS_REPLY_ERROR) return absl::StrCat("ERR:", Str(r));
  if (r->type == REDIS_REPLY_NIL) return std::string("(nil)");
  if (r->type != REDIS_REPLY_ARRAY) return Str(r);
  std::vector<std::string> parts;
  for (size_t i = 0; i < r->elements; ++i) parts.push_back(Str(r->element[i]));
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<int> RedisSentinel::SentinelPrimaryPort(size_t index) const {
  absl::StatusOr<Reply> reply =
      Call(sentinels_.at(index).port, options_.sentinel_password,
           {"SENTINEL", "get-master-addr-by-name", options_.primary_name});
  if (!reply.ok()) return reply.status();
  const redisReply* r = reply->get();
  int port = 0;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      !absl::SimpleAtoi(Str(r->element[1]), &port)) {
    return absl::UnavailableError(
        absl::StrCat("sentinel ", sentinels_[index].port, ": no primary address: ", Str(r)));
  }
  return port;
}

absl::StatusOr<std::map<std::string, std::string>> RedisSentinel::SentinelPrimaryInfo(
    size_t index) const {
  absl::StatusOr<Reply> reply = Call(sentinels_.at(index).port, options_.sentinel_password,
                                     {"SENTINEL", "MASTER", options_.primary_name});
  if (!reply.ok()) return reply.status();
  if ((*reply)->type != REDIS_REPLY_ARRAY) {
    return absl::UnavailableError(absl::StrCat("SENTINEL MASTER: ", Str(reply->get())));
  }
  return FieldMap(reply->get());
}

absl::Status RedisSentinel::CheckHealthy() const {
  size_t live = 0;
  for (const SentinelProcess& s : sentinels_) live += s.pid > 0 ? 1 : 0;
  for (size_t i = 0; i < sentinels_.size(); ++i) {
    if (sentinels_[i].pid <= 0) continue;
    const std::string who = absl::StrCat("sentinel ", sentinels_[i].port, ": ");
    absl::StatusOr<int> port = SentinelPrimaryPort(i);
    if (!port.ok()) return port.status();
    if (*port != primary_port_) {
      return absl::UnavailableError(
          absl::StrCat(who, "names primary ", *port, ", not ", primary_port_));
    }
    absl::StatusOr<std::map<std::string, std::string>> info = SentinelPrimaryInfo(i);
    if (!info.ok()) return info.status();
    if ((*info)["flags"] != "master") {
      return absl::UnavailableError(absl::StrCat(who, "primary flags ", (*info)["flags"]));
    }
    // Every other Sentinel must be known, or a failover cannot win a majority.
    if ((*info)["num-other-sentinels"] != absl::StrCat(live - 1)) {
      return absl::UnavailableError(absl::StrCat(who, "knows ", (*info)["num-other-sentinels"],
                                                 " other sentinels, not ", live - 1));
    }
    absl::StatusOr<Reply> replicas = Call(sentinels_[i].port, options_.sentinel_password,
                                          {"SENTINEL", "REPLICAS", options_.primary_name});
    if (!replicas.ok()) return replicas.status();
    bool replica_up = false;
    const redisReply* r = replicas->get();
    for (size_t j = 0; r->type == REDIS_REPLY_ARRAY && j < r->elements; ++j) {
      std::map<std::string, std::string> replica = FieldMap(r->element[j]);
      if (replica["port"] == absl::StrCat(replica_port()) && replica["flags"] == "slave" &&
          replica["master-link-status"] == "ok") {
        replica_up = true;
      }
    }
    if (!replica_up) {
      return absl::UnavailableError(
          absl::StrCat(who, "does not see replica ", replica_port(), " up"));
    }
  }
  return absl::OkStatus();
}

absl::Status RedisSentinel::WaitUntilHealthy(std::chrono::milliseconds timeout) const {
  absl::Status healthy = PollUntil(timeout, [this] { return CheckHealthy(); });
  if (healthy.ok()) return healthy;
  return absl::UnavailableError(
      absl::StrCat("sentinels not healthy after ", timeout.count(), "ms: ", healthy.message()));
}

absl::StatusOr<int> RedisSentinel::WaitForFailover(int old_primary_port,
                                                   std::chrono::milliseconds timeout) {
  int promoted = 0;
  absl::Status done = PollUntil(timeout, [&]() -> absl::Status {
    promoted = 0;
    for (size_t i = 0; i < sentinels_.size(); ++i) {
      if (sentinels_[i].pid <= 0) continue;
      absl::StatusOr<int> port = SentinelPrimaryPort(i);
      if (!port.ok()) return port.status();
      if (*port == old_primary_port) {
        return absl::UnavailableError(
            absl::StrCat("sentinel ", sentinels_[i].port, " still names ", old_primary_port));
      }
      if (promoted != 0 && *port != promoted) {
        return absl::UnavailableError("the sentinels disagree on the new primary");
      }
      promoted = *port;
    }
    if (promoted == 0) return absl::UnavailableError("no live sentinel");
    absl::StatusOr<std::string> role = Server(promoted).Command({"ROLE"});
    if (!role.ok()) return role.status();
    if (!absl::StartsWith(*role, "master")) {
      return absl::UnavailableError(absl::StrCat(promoted, " says ROLE ", *role));
    }
    return absl::OkStatus();
  });
  if (!done.ok()) {
    return absl::UnavailableError(
        absl::StrCat("no failover within ", timeout.count(), "ms: ", done.message()));
  }
  primary_port_ = promoted;
  return promoted;
}

}  // namespace sluice::testing
