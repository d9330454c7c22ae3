// rls_load: a bounded load generator for sluiced (or any Envoy rate limit service).
//
//   rls_load --target 127.0.0.1:8081 --mode grpc --inflight 64 --seconds 10 --keys 10000
//   rls_load --target 127.0.0.1:8080 --mode http --inflight 64 --seconds 10
//
// Keeps --inflight requests outstanding (gRPC: async calls on one channel and completion queue;
// HTTP: one keep-alive connection per in-flight request), each for domain --domain with one
// descriptor {--key: "k<random in [0, keys)>"}. Prints one JSON line: decisions/s, ok/over/error
// counts, p50/p99/p999 latency in microseconds, and the generator's own CPU time per decision.
// Loopback only; runs at most 120 s.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include <CLI/CLI.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

namespace {

using Clock = std::chrono::steady_clock;
using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;

struct Options {
  std::string target = "127.0.0.1:8081";
  std::string mode = "grpc";
  std::string domain = "bench";
  std::string key = "user";
  int inflight = 64;
  int seconds = 10;
  int keys = 10000;
};

struct Results {
  std::vector<int64_t> latencies_us;
  int64_t ok = 0;
  int64_t over = 0;
  int64_t errors = 0;
};

// CPU time (user + system) this process has used, in microseconds.
double ProcessCpuUs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
  };
  return us(u.ru_utime) + us(u.ru_stime);
}

void Print(const Options& o, Results& r, double elapsed_s, double cpu_us) {
  std::sort(r.latencies_us.begin(), r.latencies_us.end());
  auto pct = [&r](double p) -> int64_t {
    if (r.latencies_us.empty()) return -1;
    const auto rank = static_cast<size_t>(p * static_cast<double>(r.latencies_us.size()));
    return r.latencies_us[std::min(r.latencies_us.size() - 1, rank)];
  };
  const auto total = static_cast<double>(r.ok + r.over + r.errors);
  std::printf(
      "{\"mode\":\"%s\",\"inflight\":%d,\"keys\":%d,\"seconds\":%.2f,\"decisions_per_s\":%.0f,"
      "\"ok\":%lld,\"over\":%lld,\"errors\":%lld,\"p50_us\":%lld,\"p99_us\":%lld,\"p999_us\":%lld,"
      "\"client_cpu_us_per_decision\":%.1f}\n",
      o.mode.c_str(), o.inflight, o.keys, elapsed_s, total / elapsed_s,
      static_cast<long long>(r.ok), static_cast<long long>(r.over),
      static_cast<long long>(r.errors), static_cast<long long>(pct(0.5)),
      static_cast<long long>(pct(0.99)), static_cast<long long>(pct(0.999)),
      total > 0 ? cpu_us / total : 0.0);
}

RateLimitRequest MakeRequest(const Options& o, std::mt19937_64& rng) {
  RateLimitRequest req;
  req.set_domain(o.domain);
  auto* e = req.add_descriptors()->add_entries();
  e->set_key(o.key);
  e->set_value("k" + std::to_string(rng() % static_cast<uint64_t>(o.keys)));
  return req;
}

// gRPC: one completion queue, `inflight` outstanding unary calls, re-issued as each completes.
Results RunGrpc(const Options& o, Clock::time_point stop) {
  auto channel = grpc::CreateChannel(o.target, grpc::InsecureChannelCredentials());
  auto stub = envoy::service::ratelimit::v3::RateLimitService::NewStub(channel);
  grpc::CompletionQueue cq;
  struct Call {
    grpc::ClientContext context;
    RateLimitResponse response;
    grpc::Status status;
    Clock::time_point start;
    std::unique_ptr<grpc::ClientAsyncResponseReader<RateLimitResponse>> reader;
  };
  std::mt19937_64 rng(42);
  auto issue = [&]() {
    auto* call = new Call();
    call->start = Clock::now();
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    call->reader = stub->AsyncShouldRateLimit(&call->context, MakeRequest(o, rng), &cq);
    call->reader->Finish(&call->response, &call->status, call);
  };
  for (int i = 0; i < o.inflight; ++i) issue();
  Results r;
  int outstanding = o.inflight;
  void* tag = nullptr;
  bool ok = false;
  while (outstanding > 0 && cq.Next(&tag, &ok)) {
    std::unique_ptr<Call> call(static_cast<Call*>(tag));
    --outstanding;
    r.latencies_us.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - call->start).count());
    if (!ok || !call->status.ok()) {
      ++r.errors;
    } else if (call->response.overall_code() == RateLimitResponse::OVER_LIMIT) {
      ++r.over;
    } else {
      ++r.ok;
    }
    if (Clock::now() < stop) {
      issue();
      ++outstanding;
    }
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) delete static_cast<Call*>(tag);
  return r;
}

// HTTP: `inflight` keep-alive connections, each with one request outstanding, on one thread.
Results RunHttp(const Options& o, Clock::time_point stop) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  namespace net = boost::asio;
  net::io_context ioc;
  const size_t colon = o.target.rfind(':');
  net::ip::tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(o.target.substr(0, colon), o.target.substr(colon + 1));
  Results r;
  struct Conn : std::enable_shared_from_this<Conn> {
    Conn(net::io_context& ioc, const Options& o, Results& r, Clock::time_point stop, uint64_t seed)
        : stream(ioc), o(o), r(r), stop(stop), rng(seed) {}
    void Send() {
      req = {http::verb::post, "/json", 11};
      req.set(http::field::host, "localhost");
      req.set(http::field::content_type, "application/json");
      req.body() = R"({"domain":")" + o.domain + R"(","descriptors":[{"entries":[{"key":")" +
                   o.key + R"(","value":"k)" +
                   std::to_string(rng() % static_cast<uint64_t>(o.keys)) + R"("}]}]})";
      req.prepare_payload();
      start = Clock::now();
      http::async_write(stream, req, [self = shared_from_this()](beast::error_code ec, size_t) {
        if (ec) return self->Fail();
        self->res = {};
        http::async_read(
            self->stream, self->buffer, self->res, [self](beast::error_code ec2, size_t) {
              if (ec2) return self->Fail();
              self->r.latencies_us.push_back(
                  std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - self->start)
                      .count());
              if (self->res.result_int() == 200) {
                ++self->r.ok;
              } else if (self->res.result_int() == 429) {
                ++self->r.over;
              } else {
                ++self->r.errors;
              }
              if (Clock::now() < self->stop) self->Send();
            });
      });
    }
    void Fail() { ++r.errors; }
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::response<http::string_body> res;
    const Options& o;
    Results& r;
    Clock::time_point stop;
    Clock::time_point start;
    std::mt19937_64 rng;
  };
  std::vector<std::shared_ptr<Conn>> conns;
  for (int i = 0; i < o.inflight; ++i) {
    auto c = std::make_shared<Conn>(ioc, o, r, stop, 1000 + i);
    c->stream.connect(endpoints);
    c->Send();
    conns.push_back(c);
  }
  ioc.run();
  return r;
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"rls_load: bounded load for an Envoy rate limit service"};
  app.add_option("--target", o.target, "host:port")->capture_default_str();
  app.add_option("--mode", o.mode, "grpc | http")->capture_default_str();
  app.add_option("--domain", o.domain)->capture_default_str();
  app.add_option("--key", o.key, "descriptor key")->capture_default_str();
  app.add_option("--inflight", o.inflight)->capture_default_str();
  app.add_option("--seconds", o.seconds)->capture_default_str();
  app.add_option("--keys", o.keys, "distinct descriptor values")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.seconds = std::clamp(o.seconds, 1, 120);
  o.inflight = std::clamp(o.inflight, 1, 4096);
  o.keys = std::max(1, o.keys);
  // Debian's Abseil checks lock order on every absl::Mutex lock (it is built without NDEBUG);
  // gRPC locks several per call, so the generator would spend its CPU on bookkeeping.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const auto begin = Clock::now();
  const auto stop = begin + std::chrono::seconds(o.seconds);
  const double cpu_begin = ProcessCpuUs();
  Results r = o.mode == "http" ? RunHttp(o, stop) : RunGrpc(o, stop);
  Print(o, r, std::chrono::duration<double>(Clock::now() - begin).count(),
        ProcessCpuUs() - cpu_begin);
  return r.errors > 0 && r.ok + r.over == 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A failure to connect or to start a thread ends the run with a message, not an abort.
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rls_load: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "rls_load: unknown exception\n");
  }
  return 1;
}
