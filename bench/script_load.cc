// script_load: Redis's own ceiling for sluice's check scripts, as redis-benchmark measures it for
// other commands (redis-benchmark cannot send them: a check's argument is binary, lua_scripts.h).
//
//   script_load --port 6390 --call fcall --algorithm gcra --requests 500000
//
// Sends --requests calls of one algorithm's check (FCALL of the library's function, or EVALSHA of
// its script; loaded first) from --connections connections, each keeping --pipeline calls in
// flight, on --keys uniform random keys, and prints one JSON line: calls/s, error replies, and the
// client's own CPU per call. The limit is high (1e7 per 60 s per key; 100,000 for the sliding
// log), so every call runs the allow path. For Redis's CPU per call, read INFO commandstats
// (bench/script_cost.sh). Loopback only.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include "sluice/limit.h"

#include "src/store/redis/lua_scripts.h"

namespace {

struct Connection {
  redisContext* c = nullptr;
  ~Connection() {
    if (c != nullptr) redisFree(c);
  }
};

// Runs one command and returns its reply's text, or the error.
std::string Command(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data()));
  if (reply == nullptr) return std::string("connection error: ") + c->errstr;
  std::string text = reply->str != nullptr ? std::string(reply->str, reply->len) : "";
  if (reply->type == REDIS_REPLY_ERROR) text = "error: " + text;
  freeReplyObject(reply);
  return text;
}

double CpuMicros() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  auto us = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
  };
  return us(r.ru_utime) + us(r.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 6390;
  std::string call = "fcall";
  std::string algorithm = "fixed_window";
  int64_t requests = 200000;
  int connections = 50;
  int pipeline = 16;
  int keys = 10000;
  CLI::App app{"script_load: Redis's ceiling for sluice's check scripts"};
  app.add_option("--port", port)->capture_default_str();
  app.add_option("--call", call, "fcall | evalsha")->capture_default_str();
  app.add_option("--algorithm", algorithm)->capture_default_str();
  app.add_option("--requests", requests)->capture_default_str();
  app.add_option("--connections", connections)->capture_default_str();
  app.add_option("--pipeline", pipeline)->capture_default_str();
  app.add_option("--keys", keys)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  absl::StatusOr<sluice::Algorithm> algo = sluice::ParseAlgorithm(algorithm);
  if (!algo.ok() || (call != "fcall" && call != "evalsha")) {
    std::cerr << "bad --algorithm or --call\n";
    return 2;
  }
  connections = std::clamp(connections, 1, 512);
  pipeline = std::clamp(pipeline, 1, 1024);
  keys = std::max(keys, 1);
  const int64_t quota = *algo == sluice::Algorithm::kSlidingLog ? 100'000 : 10'000'000;
  const sluice::Limit limit{
      .algorithm = *algo, .limit = quota, .period = std::chrono::seconds(60), .burst = {}};
  std::vector<std::string> check;
  sluice::AppendCheckArguments(limit, 1, check);
  const sluice::LuaScript& script = sluice::CheckScript(*algo);

  // Load what the calls need, so that no call pays for it.
  {
    Connection setup{redisConnect("127.0.0.1", port)};
    if (setup.c == nullptr || setup.c->err != 0) {
      std::cerr << "cannot connect to 127.0.0.1:" << port << "\n";
      return 1;
    }
    const std::string loaded =
        call == "fcall" ? Command(setup.c, {"FUNCTION", "LOAD", "REPLACE", script.library->text})
                        : Command(setup.c, {"SCRIPT", "LOAD", std::string(script.text)});
    if (loaded.starts_with("error") || loaded.starts_with("connection")) {
      std::cerr << "loading: " << loaded << "\n";
      return 1;
    }
  }
  const std::string ref = call == "fcall" ? script.function : script.sha1;
  const std::string command = call == "fcall" ? "FCALL" : "EVALSHA";
  const std::string suffix(sluice::AlgorithmName(*algo));

  std::atomic<int64_t> next{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  const double cpu_begin = CpuMicros();
  const auto begin = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&, t] {
      Connection conn{redisConnect("127.0.0.1", port)};
      if (conn.c == nullptr || conn.c->err != 0) {
        failed = true;
        return;
      }
      std::mt19937_64 rng(0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(t + 1));
      for (;;) {
        const int64_t first = next.fetch_add(pipeline);
        if (first >= requests) return;
        const int64_t batch = std::min<int64_t>(pipeline, requests - first);
        for (int64_t i = 0; i < batch; ++i) {
          const std::string key = "sluice:{bench:k" +
                                  std::to_string(rng() % static_cast<uint64_t>(keys)) +
                                  "}:" + suffix;
          const char* args[] = {command.c_str(), ref.c_str(), "1", key.c_str(), check[0].data()};
          const size_t lens[] = {command.size(), ref.size(), 1, key.size(), check[0].size()};
          redisAppendCommandArgv(conn.c, 5, args, lens);
        }
        for (int64_t i = 0; i < batch; ++i) {
          void* reply = nullptr;
          if (redisGetReply(conn.c, &reply) != REDIS_OK || reply == nullptr) {
            failed = true;
            return;
          }
          if (static_cast<redisReply*>(reply)->type == REDIS_REPLY_ERROR) errors.fetch_add(1);
          freeReplyObject(reply);
        }
        done.fetch_add(batch);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const double cpu = CpuMicros() - cpu_begin;
  if (failed) {
    std::cerr << "a connection failed\n";
    return 1;
  }
  std::printf(
      "{\"call\":\"%s\",\"algorithm\":\"%s\",\"requests\":%lld,\"errors\":%lld,\"seconds\":%.2f,"
      "\"calls_per_s\":%.0f,\"client_cpu_us_per_call\":%.2f}\n",
      call.c_str(), algorithm.c_str(), static_cast<long long>(done.load()),
      static_cast<long long>(errors.load()), seconds, static_cast<double>(done.load()) / seconds,
      done.load() > 0 ? cpu / static_cast<double>(done.load()) : 0.0);
  return errors.load() > 0 ? 1 : 0;
}
