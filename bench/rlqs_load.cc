// rlqs_load: Envoy-like rate limit quota streams against a sluiced, for the cost of a report.
//
// Each of --streams streams (one gRPC connection each, as one Envoy each) sends a report of
// --buckets buckets {--key: b<i>} every --interval-ms for --seconds, and reads the answer before
// the next one; a report's latency is from its write to its answer. It prints one JSON line: the
// reports answered, the bucket reports in them, the latency percentiles of a whole report, and the
// actions that were not assignments (abandoned buckets).
//
//   rlqs_load --target 127.0.0.1:8081 --streams 10 --buckets 100 --interval-ms 1000
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "envoy/service/rate_limit_quota/v3/rlqs.grpc.pb.h"
#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

namespace {

namespace rlqs = envoy::service::rate_limit_quota::v3;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string target = "127.0.0.1:8081";
  std::string domain = "rlqs-bench";
  std::string key = "name";
  int streams = 10;
  int buckets = 100;
  int interval_ms = 1000;
  int seconds = 10;
};

struct Totals {
  std::mutex mu;
  std::vector<double> latencies_ms;
  uint64_t bucket_reports = 0;
  uint64_t not_assigned = 0;
  uint64_t errors = 0;
};

void RunStream(const Options& o, int index, Clock::time_point end, Totals& totals) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // A connection per stream, as per Envoy.
  auto channel = grpc::CreateCustomChannel(o.target, grpc::InsecureChannelCredentials(), args);
  auto stub = rlqs::RateLimitQuotaService::NewStub(channel);
  grpc::ClientContext context;
  // A report none of whose buckets could be allocated gets no answer (Envoy does not wait for
  // one); this deadline ends a stream left waiting, counted as an error.
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(o.seconds + 10));
  context.AddMetadata("x-sluice-rlqs-client", "bench-envoy-" + std::to_string(index));
  auto stream = stub->StreamRateLimitQuotas(&context);
  rlqs::RateLimitQuotaUsageReports report;
  report.set_domain(o.domain);
  for (int b = 0; b < o.buckets; ++b) {
    auto& usage = *report.add_bucket_quota_usages();
    (*usage.mutable_bucket_id()->mutable_bucket())[o.key] = "b" + std::to_string(b);
  }
  std::vector<double> latencies;
  uint64_t bucket_reports = 0;
  uint64_t not_assigned = 0;
  uint64_t errors = 0;
  Clock::time_point next = Clock::now();
  for (int n = 0; Clock::now() < end; ++n) {
    for (auto& usage : *report.mutable_bucket_quota_usages()) {
      // Envoy's first report says 0 s; then whole seconds of the interval.
      usage.mutable_time_elapsed()->set_seconds(n == 0 ? 0 : std::max(1, o.interval_ms / 1000));
      usage.set_num_requests_allowed(static_cast<uint64_t>(10 + (n + index) % 7));
      usage.set_num_requests_denied(0);
    }
    const Clock::time_point start = Clock::now();
    rlqs::RateLimitQuotaResponse response;
    if (!stream->Write(report) || !stream->Read(&response)) {
      ++errors;
      break;
    }
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    bucket_reports += static_cast<uint64_t>(o.buckets);
    for (const auto& action : response.bucket_action()) {
      if (!action.has_quota_assignment_action()) ++not_assigned;
    }
    next += std::chrono::milliseconds(o.interval_ms);
    std::this_thread::sleep_until(next);
  }
  stream->WritesDone();
  // Whatever the server still sends (an answer to a report abandoned by the deadline, a top-up)
  // is read before the status.
  for (rlqs::RateLimitQuotaResponse unread; stream->Read(&unread);) {
  }
  const grpc::Status status = stream->Finish();
  if (!status.ok() && errors == 0) ++errors;
  std::lock_guard lock(totals.mu);
  totals.latencies_ms.insert(totals.latencies_ms.end(), latencies.begin(), latencies.end());
  totals.bucket_reports += bucket_reports;
  totals.not_assigned += not_assigned;
  totals.errors += errors;
}

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"rlqs_load: Envoy-like rate limit quota streams against a sluiced"};
  app.add_option("--target", o.target, "host:port")->capture_default_str();
  app.add_option("--domain", o.domain)->capture_default_str();
  app.add_option("--key", o.key, "bucket_id key")->capture_default_str();
  app.add_option("--streams", o.streams)->check(CLI::Range(1, 10'000))->capture_default_str();
  app.add_option("--buckets", o.buckets, "buckets per report")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  app.add_option("--interval-ms", o.interval_ms)
      ->check(CLI::Range(1, 60'000))
      ->capture_default_str();
  app.add_option("--seconds", o.seconds)->check(CLI::Range(1, 3600))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  Totals totals;
  const Clock::time_point end = Clock::now() + std::chrono::seconds(o.seconds);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(o.streams));
  for (int i = 0; i < o.streams; ++i) {
    threads.emplace_back([&, i] { RunStream(o, i, end, totals); });
  }
  for (std::thread& t : threads) t.join();
  const size_t reports = totals.latencies_ms.size();
  std::printf(
      "{\"streams\":%d,\"buckets\":%d,\"interval_ms\":%d,\"reports\":%zu,\"bucket_reports\":%llu,"
      "\"not_assigned\":%llu,\"errors\":%llu,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f}\n",
      o.streams, o.buckets, o.interval_ms, reports,
      static_cast<unsigned long long>(totals.bucket_reports),
      static_cast<unsigned long long>(totals.not_assigned),
      static_cast<unsigned long long>(totals.errors), Percentile(totals.latencies_ms, 0.5),
      Percentile(totals.latencies_ms, 0.99), Percentile(totals.latencies_ms, 1.0));
  return totals.errors == 0 ? 0 : 1;
}
