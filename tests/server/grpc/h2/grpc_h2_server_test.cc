// The nghttp2 engine alone, on the wire (tests/testing/h2_client.h): what gRPC's protocol asks of
// a server, the bounds, and the connection's life. No gRPC C++ here, so it runs under TSan: the
// methods answer from other threads. Loopback; real time only as a watchdog and for deadlines.
#include "src/server/grpc/h2/grpc_h2_server.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "src/server/grpc/h2/grpc_framing.h"
#include "src/util/mutex.h"
#include "tests/testing/child_process.h"
#include "tests/testing/h2_client.h"

namespace sluice::server::h2 {
namespace {

using testing::H2Client;

class GrpcH2ServerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_ != nullptr) server_->Stop();
    for (std::thread& t : threads_) t.join();
  }

  void Start(GrpcH2ServerOptions options = {}) {
    absl::flat_hash_map<std::string, UnaryMethod> methods;
    // Answers with the request, from a thread of its own.
    methods["/t.S/Echo"] = [this](std::string_view request, const std::string&, Responder respond) {
      internal::MutexLock lock(&mu_);
      threads_.emplace_back(
          [request = std::string(request), respond = std::move(respond)]() mutable {
            std::move(respond)(request);
          });
    };
    methods["/t.S/Fail"] = [](std::string_view, const std::string&, Responder respond) {
      std::move(respond)(absl::InternalError("50% na\xc3\xafve\n"));
    };
    methods["/t.S/Hold"] = [this](std::string_view, const std::string& peer, Responder respond) {
      internal::MutexLock lock(&mu_);
      held_.push_back(std::move(respond));
      peer_ = peer;
    };
    options.health_services = {"", "ratelimit"};
    server_ = std::make_unique<GrpcH2Server>(std::move(options), std::move(methods));
    ASSERT_TRUE(server_->Start().ok());
  }

  size_t held() {
    internal::MutexLock lock(&mu_);
    return held_.size();
  }

  // Answers the held call `i` with `response`, from another thread.
  void AnswerHeld(size_t i, absl::StatusOr<std::string> response) {
    Responder respond = [&] {
      internal::MutexLock lock(&mu_);
      return std::move(held_.at(i));
    }();
    std::thread([&respond, &response] { std::move(respond)(std::move(response)); }).join();
  }

  static H2Client::Request Grpc(std::string path, std::string message) {
    return {.path = std::move(path), .body = FramedMessage(message)};
  }

  std::unique_ptr<GrpcH2Server> server_;
  internal::Mutex mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<Responder> held_ ABSL_GUARDED_BY(mu_);
  std::string peer_ ABSL_GUARDED_BY(mu_);
};

TEST_F(GrpcH2ServerTest, AnswerFromAnotherThreadHasMessageThenTrailers) {
  Start();
  H2Client client(server_->port());
  const H2Client::Response r = client.Await(client.Send(Grpc("/t.S/Echo", "hello")));
  EXPECT_EQ(r.headers.at(":status"), "200");
  EXPECT_EQ(r.headers.at("content-type"), "application/grpc");
  EXPECT_EQ(r.headers.count("grpc-status"), 0u);
  EXPECT_EQ(r.data, FramedMessage("hello"));
  EXPECT_EQ(r.trailers.at("grpc-status"), "0");
  EXPECT_EQ(r.reset_code, 0u);
}

TEST_F(GrpcH2ServerTest, ErrorIsTrailersOnlyWithAPercentEncodedMessage) {
  Start();
  H2Client client(server_->port());
  const H2Client::Response r = client.Await(client.Send(Grpc("/t.S/Fail", "")));
  EXPECT_EQ(r.headers.at(":status"), "200");
  EXPECT_EQ(r.headers.at("grpc-status"), "13");
  EXPECT_EQ(r.headers.at("grpc-message"), "50%25 na%C3%AFve%0A");
  EXPECT_EQ(r.data, "");
  EXPECT_TRUE(r.trailers.empty());
}

TEST_F(GrpcH2ServerTest, WhatIsNotAKnownGrpcCallIsRefused) {
  Start();
  H2Client client(server_->port());
  EXPECT_EQ(client.Await(client.Send(Grpc("/t.S/Nothing", ""))).headers.at("grpc-status"), "12");
  H2Client::Request get = Grpc("/t.S/Echo", "");
  get.method = "GET";
  get.body = "";
  EXPECT_EQ(client.Await(client.Send(get)).headers.at(":status"), "405");
  H2Client::Request json = Grpc("/t.S/Echo", "");
  json.content_type = "application/json";
  EXPECT_EQ(client.Await(client.Send(json)).headers.at(":status"), "415");
  H2Client::Request grpc_web = Grpc("/t.S/Echo", "");
  grpc_web.content_type = "application/grpc-web";
  EXPECT_EQ(client.Await(client.Send(grpc_web)).headers.at(":status"), "415");
  H2Client::Request proto = Grpc("/t.S/Echo", "x");
  proto.content_type = "application/grpc+proto";
  EXPECT_EQ(client.Await(client.Send(proto)).trailers.at("grpc-status"), "0");
}

TEST_F(GrpcH2ServerTest, BodiesThatAreNotOneMessage) {
  Start();
  H2Client client(server_->port());
  const auto status = [&](std::string body) {
    return client.Await(client.Send({.path = "/t.S/Echo", .body = std::move(body)}))
        .headers.at("grpc-status");
  };
  EXPECT_EQ(status(""), "13");
  EXPECT_EQ(status(FramedMessage("a") + FramedMessage("b")), "13");
  EXPECT_EQ(status(FramedMessage("abc").substr(0, 6)), "13");
  std::string compressed = FramedMessage("abc");
  compressed[0] = 1;
  EXPECT_EQ(status(compressed), "12");
}

TEST_F(GrpcH2ServerTest, HealthCheckFollowsSetServing) {
  Start();
  H2Client client(server_->port());
  const auto check = [&](std::string request) {
    return client.Await(client.Send(Grpc("/grpc.health.v1.Health/Check", std::move(request))));
  };
  EXPECT_EQ(check("").data, FramedMessage(HealthCheckResponse(ServingStatus::kServing)));
  EXPECT_EQ(check("\x0a\x09ratelimit").data,
            FramedMessage(HealthCheckResponse(ServingStatus::kServing)));
  server_->SetServing(false);
  EXPECT_EQ(check("").data, FramedMessage(HealthCheckResponse(ServingStatus::kNotServing)));
  EXPECT_EQ(check("\x0a\x07nothing").headers.at("grpc-status"), "5");
  EXPECT_EQ(check("\x0b").headers.at("grpc-status"), "3");
  EXPECT_EQ(
      client.Await(client.Send(Grpc("/grpc.health.v1.Health/Watch", ""))).headers.at("grpc-status"),
      "12");
}

// Verifies a message declaring more than the limit is refused as soon as its prefix arrives,
// while the client has not finished sending it.
TEST_F(GrpcH2ServerTest, MessageOverTheLimitIsRefusedAtItsPrefix) {
  Start({.max_message_bytes = 100});
  H2Client client(server_->port());
  const std::string prefix = FramedMessage(std::string(101, 'x')).substr(0, 5);
  const H2Client::Response r =
      client.Await(client.Send({.path = "/t.S/Echo", .body = prefix, .end = false}));
  EXPECT_EQ(r.headers.at("grpc-status"), "8");
  // The stream ends without the client ending its request: the server reset it (NO_ERROR).
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(client.Await(client.Send(Grpc("/t.S/Echo", "ok"))).trailers.at("grpc-status"), "0");
}

// Verifies the bound on request bytes held per connection: two unfinished requests together
// beyond it, and the one that crosses it is RESOURCE_EXHAUSTED.
TEST_F(GrpcH2ServerTest, RequestBytesHeldPerConnectionAreBounded) {
  Start({.max_message_bytes = 1000, .max_connection_buffer_bytes = 1500});
  H2Client client(server_->port());
  const std::string part = FramedMessage(std::string(1000, 'x')).substr(0, 900);
  const int32_t first = client.Send({.path = "/t.S/Echo", .body = part, .end = false});
  const int32_t second = client.Send({.path = "/t.S/Echo", .body = part, .end = false});
  const H2Client::Response r = client.Await(second);
  EXPECT_EQ(r.headers.at("grpc-status"), "8");
  EXPECT_NE(r.headers.at("grpc-message").find("buffered"), std::string::npos);
  client.Reset(first);
  EXPECT_EQ(client.Await(client.Send(Grpc("/t.S/Echo", "ok"))).trailers.at("grpc-status"), "0");
}

// Verifies the bound on request bytes held over all connections.
TEST_F(GrpcH2ServerTest, RequestBytesHeldOverAllConnectionsAreBounded) {
  Start({.max_message_bytes = 1000, .max_buffered_bytes = 1500});
  H2Client first(server_->port());
  H2Client second(server_->port());
  const std::string part = FramedMessage(std::string(1000, 'x')).substr(0, 900);
  const int32_t held = first.Send({.path = "/t.S/Echo", .body = part, .end = false});
  // The first request's bytes have arrived once a later call on its connection is answered.
  EXPECT_EQ(first.Await(first.Send(Grpc("/t.S/Echo", "a"))).trailers.at("grpc-status"), "0");
  const H2Client::Response r =
      second.Await(second.Send({.path = "/t.S/Echo", .body = part, .end = false}));
  EXPECT_EQ(r.headers.at("grpc-status"), "8");
  EXPECT_NE(r.headers.at("grpc-message").find("server"), std::string::npos);
  first.Reset(held);
  EXPECT_EQ(first.Await(first.Send(Grpc("/t.S/Echo", "b"))).trailers.at("grpc-status"), "0");
  EXPECT_EQ(
      second.Await(second.Send({.path = "/t.S/Echo", .body = part})).headers.at("grpc-status"),
      "13");
}

// Verifies the bytes of requests a client left unfinished stop counting against the server-wide
// bound once its connection is gone.
TEST_F(GrpcH2ServerTest, ClosedConnectionGivesBackItsRequestBytes) {
  Start({.max_message_bytes = 1000, .max_buffered_bytes = 1500});
  const std::string part = FramedMessage(std::string(1000, 'x')).substr(0, 900);
  {
    H2Client gone(server_->port());
    gone.Send({.path = "/t.S/Echo", .body = part, .end = false});
    EXPECT_EQ(gone.Await(gone.Send(Grpc("/t.S/Echo", "a"))).trailers.at("grpc-status"), "0");
    EXPECT_EQ(server_->Stats().buffered_request_bytes, 900u);
  }
  ASSERT_TRUE(testing::WaitFor([&] { return server_->Stats().open_connections == 0; }, 10'000));
  EXPECT_EQ(server_->Stats().buffered_request_bytes, 0u);
  H2Client client(server_->port());
  // 1,000 bytes: over the bound if the 900 still counted.
  const H2Client::Response r = client.Await(client.Send(Grpc("/t.S/Echo", std::string(995, 'y'))));
  EXPECT_FALSE(r.headers.contains("grpc-message")) << r.headers.at("grpc-message");
  EXPECT_EQ(r.data.size(), 1000u);
}

TEST_F(GrpcH2ServerTest, HeaderBlockOverTheBoundResetsThatStreamOnly) {
  Start({.max_header_bytes = 1024});
  H2Client client(server_->port());
  H2Client::Request big = Grpc("/t.S/Echo", "x");
  big.headers.push_back({"x-big", std::string(2000, 'a')});
  const H2Client::Response r = client.Await(client.Send(big));
  EXPECT_TRUE(r.closed);
  EXPECT_NE(r.reset_code, 0u);
  EXPECT_EQ(r.headers.count(":status"), 0u);
  EXPECT_EQ(client.Await(client.Send(Grpc("/t.S/Echo", "ok"))).trailers.at("grpc-status"), "0");
}

TEST_F(GrpcH2ServerTest, SettingsAdvertiseTheStreamAndHeaderBounds) {
  Start({.max_concurrent_streams = 7, .max_header_bytes = 4096});
  H2Client client(server_->port());
  ASSERT_TRUE(client.PumpUntil(
      [&] { return client.RemoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) == 7; }));
  EXPECT_EQ(client.RemoteSetting(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE), 4096u);
}

TEST_F(GrpcH2ServerTest, AnswerAfterTheDeadlineIsDeadlineExceeded) {
  Start();
  H2Client client(server_->port());
  H2Client::Request request = Grpc("/t.S/Hold", "");
  request.headers.push_back({"grpc-timeout", "50m"});
  const auto sent = std::chrono::steady_clock::now();
  const int32_t id = client.Send(request);
  ASSERT_TRUE(testing::WaitFor([&] { return held() == 1; }, 10'000));
  EXPECT_EQ(peer_.rfind("ipv4:127.0.0.1:", 0), 0u) << peer_;
  ASSERT_TRUE(testing::WaitFor(
      [&] { return std::chrono::steady_clock::now() - sent > std::chrono::milliseconds(60); },
      10'000));
  AnswerHeld(0, std::string("late"));
  EXPECT_EQ(client.Await(id).headers.at("grpc-status"), "4");
}

TEST_F(GrpcH2ServerTest, AnswerForAResetStreamIsDropped) {
  Start();
  H2Client client(server_->port());
  const int32_t id = client.Send(Grpc("/t.S/Hold", ""));
  ASSERT_TRUE(testing::WaitFor([&] { return held() == 1; }, 10'000));
  client.Reset(id);
  // The reset has reached the server once a later call on the connection is answered.
  EXPECT_EQ(client.Await(client.Send(Grpc("/t.S/Echo", "a"))).trailers.at("grpc-status"), "0");
  AnswerHeld(0, std::string("nobody asks"));
  EXPECT_EQ(client.Await(client.Send(Grpc("/t.S/Echo", "b"))).data, FramedMessage("b"));
}

TEST_F(GrpcH2ServerTest, StopSendsGoawayAndFinishesTheCallInFlight) {
  Start();
  H2Client client(server_->port());
  const int32_t id = client.Send(Grpc("/t.S/Hold", ""));
  ASSERT_TRUE(testing::WaitFor([&] { return held() == 1; }, 10'000));
  std::thread stopper([this] { server_->Stop(); });
  ASSERT_TRUE(client.PumpUntil([&] { return client.goaway(); }));
  AnswerHeld(0, std::string("done"));
  const H2Client::Response r = client.Await(id);
  EXPECT_EQ(r.data, FramedMessage("done"));
  EXPECT_EQ(r.trailers.at("grpc-status"), "0");
  stopper.join();
  EXPECT_TRUE(client.PumpUntil([&] { return client.eof(); }));
}

TEST_F(GrpcH2ServerTest, IdleConnectionGetsGoawayThenCloses) {
  Start({.max_connection_idle = std::chrono::milliseconds(100)});
  H2Client client(server_->port());
  EXPECT_EQ(client.Await(client.Send(Grpc("/t.S/Echo", "a"))).trailers.at("grpc-status"), "0");
  ASSERT_TRUE(client.PumpUntil([&] { return client.eof(); }));
  EXPECT_TRUE(client.goaway());
}

// Verifies an aged connection is closed after its grace even with a call never answered.
TEST_F(GrpcH2ServerTest, AgedConnectionClosesAfterItsGrace) {
  Start({.max_connection_age = std::chrono::milliseconds(100),
         .max_connection_age_grace = std::chrono::milliseconds(100)});
  H2Client client(server_->port());
  const int32_t id = client.Send(Grpc("/t.S/Hold", ""));
  ASSERT_TRUE(client.PumpUntil([&] { return client.eof(); }));
  EXPECT_TRUE(client.goaway());
  EXPECT_FALSE(client.Await(id).headers.contains(":status"));
}

TEST_F(GrpcH2ServerTest, ConnectionsBeyondTheCapAreClosed) {
  Start({.max_connections = 1});
  H2Client first(server_->port());
  EXPECT_EQ(first.Await(first.Send(Grpc("/t.S/Echo", "a"))).trailers.at("grpc-status"), "0");
  H2Client second(server_->port());
  EXPECT_TRUE(second.PumpUntil([&] { return second.eof(); }));
  EXPECT_EQ(server_->Stats().listener.rejected_over_cap, 1u);
  EXPECT_EQ(server_->Stats().open_connections, 1u);
}

}  // namespace
}  // namespace sluice::server::h2
