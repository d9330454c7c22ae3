// The rate limit quota service beside the rate limit service, under gRPC C++ clients that behave
// as Envoy's rate_limit_quota filter does (reports with time_elapsed 0 first, several buckets per
// stream), on one sluiced with the memory allocator and on two sluiced sharing one Redis.
#include "src/server/grpc/rlqs_grpc_service.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "envoy/service/rate_limit_quota/v3/rlqs.grpc.pb.h"
#include "gtest/gtest.h"
#include <grpcpp/grpcpp.h>

#include "sluice/memory_store.h"
#include "sluice/store_url.h"

#include "src/server/grpc/grpc_server.h"
#include "src/server/grpc/rls_grpc_service.h"
#include "src/server/rlqs/memory_quota_allocator.h"
#include "src/server/rlqs/redis_quota_allocator.h"
#include "src/server/stats/metrics.h"
#include "src/store/redis/client/redis_client.h"
#include "tests/testing/manual_clock.h"
#include "tests/testing/redis_endpoint_of.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/skip_or_fail.h"

namespace sluice::server {
namespace {

namespace rlqs = envoy::service::rate_limit_quota::v3;
using Reports = rlqs::RateLimitQuotaUsageReports;
using Response = rlqs::RateLimitQuotaResponse;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kConfig[] = R"(domain: quota
descriptors:
  - key: name
    value: api
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: name
    value: free
    rate_limit: {unlimited: true}
  - key: name
    value: closed
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: tenant
    descriptors:
      - key: path
        rate_limit: {unit: minute, requests_per_unit: 600}
)";

// One sluiced: a RateLimitService for the config, an allocator, both services on one listener.
struct Sluiced {
  Sluiced(QuotaAllocator& allocator, Clock& clock, RlqsGrpcServiceOptions options = {},
          const std::string& address = "127.0.0.1:0") {
    auto memory = MemoryStore::Create({});
    store = *std::move(memory);
    service = std::make_unique<RateLimitService>(*store, metrics, RateLimitServiceOptions{});
    const ConfigSource source{.name = "quota.yaml", .content = kConfig};
    service->SetConfig(*ParseRateLimitConfig({&source, 1}));
    rls = std::make_unique<RlsGrpcService>(*service, RlsGrpcServiceOptions{});
    options.clock = &clock;
    // Top-ups run when a test calls TopUp(), unless it asked for a period of its own.
    if (options.top_up_interval == RlqsGrpcServiceOptions{}.top_up_interval) {
      options.top_up_interval = milliseconds(0);
    }
    rlqs_service = std::make_unique<RlqsGrpcService>(*service, allocator, options);
    server = std::make_unique<GrpcServer>(GrpcServerOptions{.address = address},
                                          std::vector<GrpcService*>{rls.get(), rlqs_service.get()});
    EXPECT_TRUE(server->Start().ok());
    channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()),
                                  grpc::InsecureChannelCredentials());
  }

  Metrics metrics;
  std::unique_ptr<MemoryStore> store;
  std::unique_ptr<RateLimitService> service;
  std::unique_ptr<RlsGrpcService> rls;
  std::unique_ptr<RlqsGrpcService> rlqs_service;
  std::unique_ptr<GrpcServer> server;
  std::shared_ptr<grpc::Channel> channel;
};

// A client stream, as Envoy's filter keeps one per domain.
class Client {
 public:
  // `id`: the Envoy this stream reports as (kRlqsClientHeader); every test client shares one
  // address.
  // An empty `id` sends no header: the stream's connection names it.
  Client(const std::shared_ptr<grpc::Channel>& channel, const std::string& id)
      : stub_(rlqs::RateLimitQuotaService::NewStub(channel)) {
    context_.set_deadline(std::chrono::system_clock::now() + seconds(30));
    if (!id.empty()) context_.AddMetadata(kRlqsClientHeader, id);
    stream_ = stub_->StreamRateLimitQuotas(&context_);
  }

  // Sends a report of `usages` ({bucket entries, allowed}) and reads the answer.
  Response Report(const std::string& domain,
                  const std::vector<std::pair<std::map<std::string, std::string>, int>>& usages,
                  int elapsed_seconds) {
    Reports reports;
    reports.set_domain(domain);
    for (const auto& [bucket, allowed] : usages) {
      auto& usage = *reports.add_bucket_quota_usages();
      usage.mutable_bucket_id()->mutable_bucket()->insert(bucket.begin(), bucket.end());
      usage.mutable_time_elapsed()->set_seconds(elapsed_seconds);
      usage.set_num_requests_allowed(allowed);
    }
    EXPECT_TRUE(stream_->Write(reports));
    Response response;
    EXPECT_TRUE(stream_->Read(&response));
    return response;
  }

  bool Send(const Reports& reports) { return stream_->Write(reports); }
  bool Read(Response& response) { return stream_->Read(&response); }
  grpc::Status Close() {
    stream_->WritesDone();
    return stream_->Finish();
  }

 private:
  std::unique_ptr<rlqs::RateLimitQuotaService::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<Reports, Response>> stream_;
};

// The rate a response assigns its first bucket: the token bucket's tokens per fill, 0 for
// DENY_ALL, -1 for ALLOW_ALL, -2 for an abandon.
int64_t Rate(const Response::BucketAction& action) {
  if (action.has_abandon_action()) return -2;
  const auto& strategy = action.quota_assignment_action().rate_limit_strategy();
  if (strategy.has_token_bucket()) return strategy.token_bucket().tokens_per_fill().value();
  return strategy.blanket_rule() == envoy::type::v3::RateLimitStrategy::ALLOW_ALL ? -1 : 0;
}

using Bucket = std::map<std::string, std::string>;
const Bucket kApi = {{"name", "api"}};

// Reports `demand` requests a second on the api bucket over `interval` (Envoy's counts: allowed up
// to the last grant, the rest denied) and returns the answer's one action (a default action if
// the answer has not exactly one).
Response::BucketAction ReportApiAction(Client& client, int demand, int64_t last_grant,
                                       int interval_seconds) {
  Reports reports;
  reports.set_domain("quota");
  auto& usage = *reports.add_bucket_quota_usages();
  usage.mutable_bucket_id()->mutable_bucket()->insert({"name", "api"});
  usage.mutable_time_elapsed()->set_seconds(interval_seconds);
  const int64_t allowed = std::min<int64_t>(demand, std::max<int64_t>(last_grant, 0));
  usage.set_num_requests_allowed(allowed * interval_seconds);
  usage.set_num_requests_denied((demand - allowed) * interval_seconds);
  EXPECT_TRUE(client.Send(reports));
  Response response;
  EXPECT_TRUE(client.Read(response));
  return response.bucket_action_size() == 1 ? response.bucket_action(0) : Response::BucketAction();
}

// As ReportApiAction(), returning the new grant's rate (-3: not exactly one action).
int64_t ReportApi(Client& client, int demand, int64_t last_grant, int interval_seconds) {
  const Response::BucketAction action =
      ReportApiAction(client, demand, last_grant, interval_seconds);
  return action.has_bucket_id() ? Rate(action) : -3;
}

// Tests with a real redis-server of their own and a Redis allocator on it; skipped without one.
class RlqsOnRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::RedisServer>> redis = testing::RedisServer::Start();
    if (!redis.ok()) SLUICE_SKIP_OR_FAIL("no redis-server: " + redis.status().ToString());
    redis_ = *std::move(redis);
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(redis_->Url());
    ASSERT_TRUE(url.ok());
    auto client = RedisClient::Create(
        {.endpoint = testing::EndpointOf(*url), .command_timeout = milliseconds(2000)});
    ASSERT_TRUE(client.ok()) << client.status();
    redis_client_ = std::shared_ptr<RedisClient>(*std::move(client));
    ASSERT_TRUE(redis_client_->WaitForConnection(milliseconds(5000)).ok());
    allocator_ = std::make_unique<RedisQuotaAllocator>(
        redis_client_, RedisQuotaAllocatorOptions{.timeout = milliseconds(2000)});
  }

  std::unique_ptr<testing::RedisServer> redis_;
  std::shared_ptr<RedisClient> redis_client_;
  std::unique_ptr<RedisQuotaAllocator> allocator_;
};

TEST(RlqsGrpcService, AssignsTokenBucketsBlanketRulesAndAbandonsUnknownBuckets) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock);
  Client client(sluiced.channel, "envoy-1");
  const Response response = client.Report(
      "quota",
      {{kApi, 0},
       {{{"name", "free"}}, 0},
       {{{"name", "closed"}}, 0},
       {{{"name", "nope"}}, 0},
       {{{"path", "/a"}, {"tenant", "t1"}}, 0}},  // nested tenant -> path: found in that order
      0);
  ASSERT_EQ(response.bucket_action_size(), 5);
  const auto& api = response.bucket_action(0);
  EXPECT_EQ(api.bucket_id().bucket().at("name"), "api");
  EXPECT_EQ(Rate(api), 10);
  const auto& assignment = api.quota_assignment_action();
  EXPECT_EQ(assignment.rate_limit_strategy().token_bucket().max_tokens(), 10u);
  EXPECT_EQ(assignment.rate_limit_strategy().token_bucket().fill_interval().seconds(), 1);
  // As many nanoseconds as seconds: Envoy tells buckets of different units apart by the nanos.
  EXPECT_EQ(assignment.rate_limit_strategy().token_bucket().fill_interval().nanos(), 1);
  EXPECT_EQ(assignment.assignment_time_to_live().seconds(), 15);  // 3 x Envoy's 5 s
  EXPECT_EQ(assignment.assignment_time_to_live().nanos(), 0);
  EXPECT_EQ(Rate(response.bucket_action(1)), -1);
  EXPECT_EQ(Rate(response.bucket_action(2)), 0);
  EXPECT_EQ(Rate(response.bucket_action(3)), -2);
  EXPECT_EQ(Rate(response.bucket_action(4)), 600);
  EXPECT_EQ(response.bucket_action(4)
                .quota_assignment_action()
                .rate_limit_strategy()
                .token_bucket()
                .fill_interval()
                .seconds(),
            60);
  EXPECT_EQ(response.bucket_action(4)
                .quota_assignment_action()
                .rate_limit_strategy()
                .token_bucket()
                .fill_interval()
                .nanos(),
            60);
  // An unknown domain: every bucket abandoned, the stream stays open.
  const Response unknown = client.Report("other", {{kApi, 0}}, 0);
  ASSERT_EQ(unknown.bucket_action_size(), 1);
  EXPECT_EQ(Rate(unknown.bucket_action(0)), -2);
  EXPECT_EQ(Rate(client.Report("quota", {{kApi, 3}}, 5).bucket_action(0)), 10);
  EXPECT_TRUE(client.Close().ok());
  EXPECT_EQ(sluiced.rlqs_service->Stats().buckets_abandoned, 2u);
  // The api rule's last allocation, and the service's families for /metrics.
  const auto buckets = sluiced.rlqs_service->Buckets();
  ASSERT_TRUE(buckets.contains("quota.name_api"));
  const RlqsBucketState& api_state = buckets.at("quota.name_api");
  EXPECT_EQ(api_state.clients, 1u);
  EXPECT_EQ(api_state.assigned, 10u);
  EXPECT_EQ(api_state.limit, 10u);
  const std::string text = sluiced.rlqs_service->RenderPrometheus();
  EXPECT_NE(
      text.find("sluice_rlqs_bucket_assigned{domain=\"quota\",bucket=\"quota.name_api\"} 10\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("sluice_rlqs_reports_total 3\n"), std::string::npos) << text;
}

// The requests a client reports allowed and denied go to the per-rule counters RLS feeds.
// Verifies that Envoys on one host, which name no client id, are each a client of their own: three
// first reports (the filter's, at a bucket's first request) within moments of each other, on
// three connections from 127.0.0.1, get grants that sum to the limit, not three whole limits.
TEST(RlqsGrpcService, EnvoysSharingAnAddressAreSeparateClients) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock);
  int64_t granted = 0;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) {
    // A channel each: a connection each, as separate Envoy processes have.
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", i);  // not shared with the other channels' subchannels
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(sluiced.server->port()),
                                             grpc::InsecureChannelCredentials(), args);
    clients.push_back(std::make_unique<Client>(channel, ""));
    const Response r = clients.back()->Report("quota", {{kApi, 1}}, 0);
    ASSERT_EQ(r.bucket_action_size(), 1);
    granted += std::max<int64_t>(0, Rate(r.bucket_action(0)));
    clock.Advance(milliseconds(100));
  }
  EXPECT_EQ(granted, 10);  // the rule's 10 a second, once
}

TEST(RlqsGrpcService, ReportedRequestsFeedTheRuleCounters) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  std::mutex mu;
  std::map<std::string, std::pair<uint64_t, uint64_t>> seen;
  Sluiced sluiced(allocator, clock, {.on_usage = [&](const RlqsUsage& u) {
                    std::lock_guard lock(mu);
                    auto& [a, d] = seen[std::string(u.domain) + " " + std::string(u.stats_key)];
                    a += u.allowed;
                    d += u.denied;
                  }});
  Client client(sluiced.channel, "envoy-1");
  client.Report("quota", {{kApi, 0}}, 0);
  clock.Advance(seconds(5));
  Reports reports;
  reports.set_domain("quota");
  auto& usage = *reports.add_bucket_quota_usages();
  usage.mutable_bucket_id()->mutable_bucket()->insert({"name", "api"});
  usage.set_num_requests_allowed(50);
  usage.set_num_requests_denied(7);
  ASSERT_TRUE(client.Send(reports));
  Response response;
  ASSERT_TRUE(client.Read(response));
  EXPECT_TRUE(client.Close().ok());
  std::lock_guard lock(mu);
  EXPECT_EQ(seen["quota quota.name_api"], std::make_pair(uint64_t{50}, uint64_t{7}));
}

// Malformed reports (no domain, no buckets, a bucket without entries) are counted and left
// unanswered, oversized buckets are abandoned, and the stream keeps working.
TEST(RlqsGrpcService, MalformedAndOversizedReportsDoNotCloseTheStream) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock);
  Client client(sluiced.channel, "envoy-1");
  Reports empty;
  ASSERT_TRUE(client.Send(empty));
  Reports no_domain;
  no_domain.add_bucket_quota_usages()->mutable_bucket_id()->mutable_bucket()->insert(
      {"name", "api"});
  ASSERT_TRUE(client.Send(no_domain));
  Bucket huge;
  for (int i = 0; i < 5; ++i) huge["k" + std::to_string(i)] = std::string(200, 'v');
  const Response response = client.Report("quota", {{kApi, 0}, {huge, 0}}, 0);
  ASSERT_EQ(response.bucket_action_size(), 2);
  EXPECT_EQ(Rate(response.bucket_action(0)), 10);
  EXPECT_EQ(Rate(response.bucket_action(1)), -2);
  EXPECT_EQ(sluiced.rlqs_service->Stats().reports_malformed, 2u);
  EXPECT_TRUE(client.Close().ok());
}

// More reports a second than the bound: the excess is dropped unanswered and counted; once the
// budget refills the stream is answered again.
TEST(RlqsGrpcService, AReportFloodIsThrottledAndCounted) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock, {.max_reports_per_second = 2});
  Client client(sluiced.channel, "envoy-1");
  Reports report;
  report.set_domain("quota");
  report.add_bucket_quota_usages()->mutable_bucket_id()->mutable_bucket()->insert({"name", "api"});
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client.Send(report));
  Response response;
  ASSERT_TRUE(client.Read(response));
  ASSERT_TRUE(client.Read(response));
  // The 18 others are dropped; with time passing, the next report is answered.
  for (int i = 0; i < 100 && sluiced.rlqs_service->Stats().reports_throttled < 18; ++i) {
    std::this_thread::sleep_for(milliseconds(10));  // the server's reads, not time, are awaited
  }
  EXPECT_EQ(sluiced.rlqs_service->Stats().reports_throttled, 18u);
  clock.Advance(seconds(1));
  ASSERT_TRUE(client.Send(report));
  ASSERT_TRUE(client.Read(response));
  EXPECT_EQ(sluiced.rlqs_service->Stats().reports, 3u);
  EXPECT_TRUE(client.Close().ok());
}

// Past max_streams a new stream is refused RESOURCE_EXHAUSTED and counted; the open one works on.
TEST(RlqsGrpcService, StreamsPastTheBoundAreRefused) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock, {.max_streams = 1});
  Client first(sluiced.channel, "envoy-1");
  EXPECT_EQ(ReportApi(first, 30, 0, 0), 10);
  Client second(sluiced.channel, "envoy-2");
  Reports reports;
  reports.set_domain("quota");
  second.Send(reports);  // may fail: the server may have finished the stream already
  Response response;
  EXPECT_FALSE(second.Read(response));
  EXPECT_EQ(second.Close().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(sluiced.rlqs_service->Stats().streams_refused, 1u);
  EXPECT_EQ(ReportApi(first, 30, 10, 5), 10);
  EXPECT_TRUE(first.Close().ok());
}

// Three Envoys on two sluiced over one Redis, demands 30/s, 3/s, 3/s against 10/s, reporting
// every 5 s of the manual clock (time_elapsed 0 first): the live grants never sum past 10 and
// converge to the max-min shares 4, 3, 3. Then the big client closes its stream: after its TTL,
// the others get its share within two reports.
TEST_F(RlqsOnRedisTest, TwoSluicedOnOneRedisShareMaxMinFairly) {
  // The grants' TTLs run on Redis TIME; the demand measurement on the manual clock.
  RedisQuotaAllocator& allocator = *allocator_;
  testing::ManualClock clock;
  Sluiced one(allocator, clock);
  Sluiced two(allocator, clock);
  Client big(one.channel, "big");
  Client small_a(two.channel, "small-a");
  Client small_b(one.channel, "small-b");
  Client* clients[3] = {&big, &small_a, &small_b};
  const int demand[3] = {30, 3, 3};
  int64_t granted[3] = {0, 0, 0};
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 3; ++i) {
      // Envoy reports what it admitted: at most its grant, at most its demand (nothing in the
      // first report, time_elapsed 0).
      granted[i] = ReportApi(*clients[i], demand[i], granted[i], round == 0 ? 0 : 5);
      ASSERT_GE(granted[i], 0);
      EXPECT_LE(granted[0] + granted[1] + granted[2], 10) << "round " << round;
    }
    clock.Advance(seconds(5));
  }
  EXPECT_EQ(granted[0], 4);
  EXPECT_EQ(granted[1], 3);
  EXPECT_EQ(granted[2], 3);
  EXPECT_TRUE(big.Close().ok());
}

// A grant held below its share is topped up between reports, on the other sluiced, as soon as
// the grant in its way shrinks, and sent unasked; a top-up that cannot raise it sends nothing.
TEST_F(RlqsOnRedisTest, AGrantHeldBelowItsShareIsToppedUpBetweenReports) {
  RedisQuotaAllocator& allocator = *allocator_;
  testing::ManualClock clock;
  Sluiced one(allocator, clock);
  Sluiced two(allocator, clock);
  Client a(one.channel, "a");
  Client b(two.channel, "b");
  EXPECT_EQ(ReportApi(a, 30, 0, 0), 10);  // first: the whole limit
  EXPECT_EQ(ReportApi(b, 30, 0, 0), 0);   // a's 10 is live: DENY_ALL
  two.rlqs_service->TopUp();              // nothing freed yet: nothing sent
  one.rlqs_service->TopUp();
  EXPECT_EQ(two.rlqs_service->Stats().top_up_rounds, 1u);
  EXPECT_EQ(two.rlqs_service->Stats().buckets_topped_up, 0u);
  EXPECT_EQ(one.rlqs_service->Stats().top_up_rounds, 0u);  // a holds its share
  clock.Advance(seconds(5));
  EXPECT_EQ(ReportApi(a, 30, 10, 5), 5);  // a's measured 30/s: max-min gives 5 and 5
  two.rlqs_service->TopUp();
  Response pushed;
  ASSERT_TRUE(b.Read(pushed));  // unasked
  ASSERT_EQ(pushed.bucket_action_size(), 1);
  EXPECT_EQ(pushed.bucket_action(0).bucket_id().bucket().at("name"), "api");
  EXPECT_EQ(Rate(pushed.bucket_action(0)), 5);
  const auto& assignment = pushed.bucket_action(0).quota_assignment_action();
  EXPECT_EQ(assignment.assignment_time_to_live().seconds(), 15);
  EXPECT_EQ(assignment.rate_limit_strategy().token_bucket().max_tokens(), 5u);
  EXPECT_EQ(two.rlqs_service->Stats().buckets_topped_up, 1u);
  // b now holds its share: no more top-ups for it.
  two.rlqs_service->TopUp();
  EXPECT_EQ(two.rlqs_service->Stats().top_up_rounds, 2u);
  // Its next report is answered as usual, after the push.
  clock.Advance(seconds(5));
  EXPECT_EQ(ReportApi(b, 30, 5, 5), 5);
  EXPECT_TRUE(a.Close().ok());
  EXPECT_TRUE(b.Close().ok());
}

// A top-up re-asks with the limit its report was planned with; after a config reload it is
// dropped, and the client's next report plans the bucket under the new config.
TEST(RlqsGrpcService, AConfigReloadDropsPendingTopUps) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock);
  Client a(sluiced.channel, "a");
  Client b(sluiced.channel, "b");
  EXPECT_EQ(ReportApi(a, 30, 0, 0), 10);
  EXPECT_EQ(ReportApi(b, 30, 0, 0), 0);  // held below its share of 5: a top-up is pending
  const ConfigSource source{.name = "quota.yaml", .content = kConfig};
  sluiced.service->SetConfig(*ParseRateLimitConfig({&source, 1}));
  clock.Advance(seconds(5));
  EXPECT_EQ(ReportApi(a, 30, 10, 5), 5);
  sluiced.rlqs_service->TopUp();
  EXPECT_EQ(sluiced.rlqs_service->Stats().top_up_rounds, 0u);
  EXPECT_EQ(ReportApi(b, 30, 0, 5), 5);
  EXPECT_TRUE(a.Close().ok());
  EXPECT_TRUE(b.Close().ok());
}

// A saturated client's grant rises with its bucket's max_tokens kept (Envoy starts a changed bucket
// full from about one token on, so a bigger bucket would admit a whole one on top of the rate);
// once the client stops being denied, max_tokens follows the grant again.
TEST(RlqsGrpcService, ASaturatedClientsGrantRisesWithItsMaxTokensKept) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock);
  Client a(sluiced.channel, "a");
  auto b = std::make_unique<Client>(sluiced.channel, "b");
  EXPECT_EQ(ReportApi(a, 30, 0, 0), 10);
  EXPECT_EQ(ReportApi(*b, 30, 0, 0), 0);
  clock.Advance(seconds(5));
  Response::BucketAction action = ReportApiAction(a, 30, 10, 5);  // 100 denied
  EXPECT_EQ(Rate(action), 5);
  const auto max_tokens = [](const Response::BucketAction& x) {
    return x.quota_assignment_action().rate_limit_strategy().token_bucket().max_tokens();
  };
  EXPECT_EQ(max_tokens(action), 5u);  // a lower grant: never above it
  EXPECT_TRUE(b->Close().ok());
  b.reset();
  clock.Advance(seconds(16));              // b's record (15 s and the grace from t = 0) has ended
  action = ReportApiAction(a, 30, 5, 16);  // still denied: saturated
  EXPECT_EQ(Rate(action), 10);
  EXPECT_EQ(max_tokens(action), 5u);
  EXPECT_EQ(action.quota_assignment_action()
                .rate_limit_strategy()
                .token_bucket()
                .tokens_per_fill()
                .value(),
            10u);
  clock.Advance(seconds(5));
  action = ReportApiAction(a, 8, 10, 5);  // nothing denied
  EXPECT_EQ(Rate(action), 8);
  EXPECT_EQ(max_tokens(action), 8u);
  EXPECT_TRUE(a.Close().ok());
}

// The service tops up on its own every top_up_interval.
TEST(RlqsGrpcService, TopUpsRunEveryInterval) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock, {.top_up_interval = milliseconds(20)});
  Client a(sluiced.channel, "a");
  Client b(sluiced.channel, "b");
  EXPECT_EQ(ReportApi(a, 30, 0, 0), 10);
  EXPECT_EQ(ReportApi(b, 30, 0, 0), 0);
  clock.Advance(seconds(5));
  EXPECT_EQ(ReportApi(a, 30, 10, 5), 5);
  Response pushed;
  ASSERT_TRUE(b.Read(pushed));  // within 20 ms of real time, or the 30 s deadline fails it
  ASSERT_EQ(pushed.bucket_action_size(), 1);
  EXPECT_EQ(Rate(pushed.bucket_action(0)), 5);
  EXPECT_TRUE(a.Close().ok());
  EXPECT_TRUE(b.Close().ok());
}

// Four Envoys on two sluiced over one Redis, each demanding ten times the 10/s limit: at every
// report the live grants sum to at most 10, and so do their buckets' max_tokens (a full bucket on
// every Envoy at once cannot burst past one unit's budget); in the end they hold equal shares.
TEST_F(RlqsOnRedisTest, TenTimesTheLimitFromFourEnvoysNeverGrantsPastIt) {
  RedisQuotaAllocator& allocator = *allocator_;
  testing::ManualClock clock;
  Sluiced one(allocator, clock);
  Sluiced two(allocator, clock);
  Client a(one.channel, "envoy-a");
  Client b(two.channel, "envoy-b");
  Client c(one.channel, "envoy-c");
  Client d(two.channel, "envoy-d");
  Client* clients[4] = {&a, &b, &c, &d};
  constexpr int kDemand = 100;
  int64_t granted[4] = {0, 0, 0, 0};
  int64_t max_tokens[4] = {0, 0, 0, 0};
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 4; ++i) {
      const Response::BucketAction action =
          ReportApiAction(*clients[i], kDemand, granted[i], round == 0 ? 0 : 5);
      ASSERT_TRUE(action.has_bucket_id()) << "round " << round;
      granted[i] = Rate(action);
      ASSERT_GE(granted[i], 0);
      const auto& strategy = action.quota_assignment_action().rate_limit_strategy();
      max_tokens[i] = strategy.has_token_bucket() ? strategy.token_bucket().max_tokens() : 0;
      EXPECT_LE(granted[0] + granted[1] + granted[2] + granted[3], 10) << "round " << round;
      EXPECT_LE(max_tokens[0] + max_tokens[1] + max_tokens[2] + max_tokens[3], 10)
          << "round " << round;
    }
    clock.Advance(seconds(5));
  }
  // Equal shares of 10 among 4: two get 3 and two get 2 (the remainder goes by client id).
  EXPECT_EQ(granted[0] + granted[1] + granted[2] + granted[3], 10);
  for (int64_t g : granted) {
    EXPECT_GE(g, 2);
    EXPECT_LE(g, 3);
  }
  for (Client* client : clients) EXPECT_TRUE(client->Close().ok());
}

// Two Envoys reporting every second (TTL 3 s) split 10/s; one closes its stream. Its grant may be
// enforced until its TTL ends (counted from when the Envoy got it: the store adds the delivery
// grace), so the other's grant grows only then: within the TTL and the grace plus two reports, and
// never while the closed one's grant may be live.
TEST(RlqsGrpcService, AClosedStreamsShareIsRedistributedAfterItsTtl) {
  testing::ManualClock clock;
  MemoryQuotaAllocator allocator(clock);
  Sluiced sluiced(allocator, clock);
  auto a = std::make_unique<Client>(sluiced.channel, "a");
  Client b(sluiced.channel, "b");
  int64_t ga = 0;
  int64_t gb = 0;
  for (int round = 0; round < 4; ++round) {
    ga = ReportApi(*a, 30, ga, round == 0 ? 0 : 1);
    gb = ReportApi(b, 30, gb, round == 0 ? 0 : 1);
    EXPECT_LE(ga + gb, 10);
    clock.Advance(seconds(1));
  }
  EXPECT_EQ(ga, 5);
  EXPECT_EQ(gb, 5);
  EXPECT_TRUE(a->Close().ok());
  a.reset();
  // a's last grant was given 1 s ago with a TTL of 3 s.
  int reports = 0;
  while (gb != 10 && reports < 10) {
    gb = ReportApi(b, 30, gb, 1);
    ++reports;
    if (gb != 10) clock.Advance(seconds(1));
  }
  EXPECT_EQ(gb, 10);
  // Not while a's grant may be live: it ends 3 s + 1 s after it was given, 1 s before the first of
  // these reports.
  EXPECT_GE(reports, 4);
  EXPECT_LE(reports, 3 + 1 + 2);  // the TTL and the grace plus two reports
}

// sluiced restarts on the same address over the same Redis: the Envoy reconnects and is assigned
// again at once: it reports as the same client, so its new grant replaces its old one instead of
// waiting for it to expire.
TEST_F(RlqsOnRedisTest, AfterARestartClientsReconnectAndAreAssignedAgain) {
  RedisQuotaAllocator& allocator = *allocator_;
  testing::ManualClock clock;
  absl::StatusOr<int> port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string address = absl::StrCat("127.0.0.1:", *port);
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  {
    Sluiced before(allocator, clock, {}, address);
    Client envoy(channel, "envoy-1");
    EXPECT_EQ(ReportApi(envoy, 30, 0, 0), 10);
  }  // sluiced stops; the stream breaks
  Sluiced after(allocator, clock, {}, address);
  Client envoy(channel, "envoy-1");
  EXPECT_EQ(ReportApi(envoy, 30, 0, 0), 10);
  Client other(channel, "envoy-2");
  EXPECT_EQ(ReportApi(other, 30, 0, 0), 0);  // envoy-1's grant is live
}

}  // namespace
}  // namespace sluice::server
