// RedisSentinel: a real Sentinel deployment for tests: one primary, one replica and three
// Sentinels, all on free loopback ports, all stopped on destruction.
//
// Start() launches two redis-servers (the second made a replica of the first with REPLICAOF),
// waits until the replica is in sync, then launches `redis-sentinel <conf>` processes that monitor
// the primary under `primary_name` with a quorum of 2 and a short down-after-milliseconds, and
// waits until every Sentinel names the primary, sees the replica and knows every other Sentinel
// (they find each other through hello messages on the primary every 2 s, so start-up takes about
// 2-4 s). KillPrimary() SIGKILLs the primary and WaitForFailover() waits until every live Sentinel
// names the promoted replica and that server says it is a primary (about 1.5-3 s with the default
// 500 ms down-after-milliseconds). The data servers and the Sentinels may each require a password.
//
// Example:
//   auto sentinel = RedisSentinel::Start({});
//   ASSERT_TRUE(sentinel.ok()) << sentinel.status();
//   std::string url = (*sentinel)->Url();  // "redis-sentinel://127.0.0.1:S1,...,S3/sluice-primary"
//   const int old_primary = (*sentinel)->primary_port();
//   (*sentinel)->KillPrimary();
//   absl::StatusOr<int> new_primary = (*sentinel)->WaitForFailover(old_primary);
//
// Thread safety: not thread-safe; drive it from the test's main thread (the processes die with the
// thread that started them, see redis_server.h).
#ifndef SLUICE_TESTS_TESTING_REDIS_SENTINEL_H_
#define SLUICE_TESTS_TESTING_REDIS_SENTINEL_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include <sys/types.h>

#include "tests/testing/redis_server.h"

namespace sluice::testing {

class RedisSentinel {
 public:
  struct Options {
    // The name the Sentinels monitor the primary under. Default: "sluice-primary".
    std::string primary_name = "sluice-primary";
    // Sentinels started, and how many must agree that the primary is down. Defaults: 3 and 2.
    int sentinels = 3;
    int quorum = 2;
    // How long the primary may not answer before a Sentinel thinks it down. Default: 500 ms.
    std::chrono::milliseconds down_after{500};
    // Sentinel failover-timeout: bounds one failover attempt and spaces retries. Default: 2 s.
    std::chrono::milliseconds failover_timeout{2000};
    // requirepass (and masterauth) on both data servers, given to the Sentinels as auth-pass.
    // Default: empty, no password.
    std::string data_password = {};
    // requirepass on the Sentinels (and sentinel-pass, so they can talk to each other). Default:
    // empty, no password.
    std::string sentinel_password = {};
  };

  // RedisSentinel::Start()
  //
  // Starts the servers and the Sentinels and waits until they agree (WaitUntilHealthy()). Returns
  // Unavailable with the reason when a process cannot be started or they never agree (~15 s).
  static absl::StatusOr<std::unique_ptr<RedisSentinel>> Start(const Options& options);

  RedisSentinel(const RedisSentinel&) = delete;
  RedisSentinel& operator=(const RedisSentinel&) = delete;
  ~RedisSentinel();

  // "redis-sentinel://[:data_password@]127.0.0.1:S1,.../primary_name[?sentinel_password=...]".
  std::string Url() const;
  const std::string& primary_name() const { return options_.primary_name; }
  // The port of the server that is the primary as far as the fixture knows (the first one, then
  // the one WaitForFailover() returned).
  int primary_port() const { return primary_port_; }
  // The port of the other data server.
  int replica_port() const;
  // Ports of the Sentinels, in start order.
  std::vector<int> sentinel_ports() const;
  // The data server on `port`. REQUIRES: primary_port() or replica_port().
  RedisServer& Server(int port);

  // RedisSentinel::KillPrimary()
  //
  // SIGKILLs the primary (primary_port() keeps naming it until WaitForFailover()).
  void KillPrimary();

  // RedisSentinel::DetachReplica()
  //
  // Cuts the replication link and keeps it cut (the replica gets a wrong masterauth, the primary
  // drops its replica connection), so that no write from now on reaches the replica: what a
  // lagging or partitioned replica is to a failover. The Sentinels still see the replica (they
  // talk to it directly) and may promote it. Returns the error of either command.
  absl::Status DetachReplica();

  // RedisSentinel::KillSentinel()
  //
  // SIGKILLs the Sentinel started `index`-th; it is left out of later checks.
  void KillSentinel(size_t index);

  // RedisSentinel::WaitForFailover()
  //
  // Waits until every live Sentinel names a primary other than `old_primary_port` and that server
  // says ROLE master; returns its port (and primary_port() becomes it), or Unavailable with what
  // was still wrong after `timeout`.
  absl::StatusOr<int> WaitForFailover(int old_primary_port,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // RedisSentinel::WaitUntilHealthy()
  //
  // Waits until every live Sentinel names primary_port(), sees the replica up and knows every
  // other live Sentinel. Returns OK, or Unavailable with the last thing wrong after `timeout`.
  absl::Status WaitUntilHealthy(std::chrono::milliseconds timeout = std::chrono::seconds(15)) const;

  // RedisSentinel::SentinelCommand()
  //
  // Runs one command on the Sentinel started `index`-th (authenticating when it has a password)
  // and returns the reply as RedisServer::Command() does.
  absl::StatusOr<std::string> SentinelCommand(size_t index,
                                              const std::vector<std::string>& argv) const;

  // RedisSentinel::SentinelPrimaryPort()
  //
  // Returns the port the Sentinel `index` names for the primary (SENTINEL
  // get-master-addr-by-name).
  absl::StatusOr<int> SentinelPrimaryPort(size_t index) const;

 private:
  struct SentinelProcess {
    int port = 0;
    std::string dir = {};
    pid_t pid = -1;
  };

  explicit RedisSentinel(Options options) : options_(std::move(options)) {}
  absl::Status StartServers();
  absl::Status StartSentinels();
  absl::Status StartSentinel(SentinelProcess& sentinel) const;
  absl::Status CheckHealthy() const;
  // SENTINEL MASTER <name> as field -> value.
  absl::StatusOr<std::map<std::string, std::string>> SentinelPrimaryInfo(size_t index) const;
  static void StopProcess(pid_t& pid);

  Options options_;
  std::vector<std::unique_ptr<RedisServer>> servers_;
  std::vector<SentinelProcess> sentinels_;
  int primary_port_ = 0;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_REDIS_SENTINEL_H_
