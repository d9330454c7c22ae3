// attack_load: the hostile loads of bench/attack.sh, and the probe that measures sluiced beside
// them. Loopback only; every mode is bounded by --seconds (at most 120).
//
//   attack_load probe --grpc 127.0.0.1:8081 --http 127.0.0.1:8080 --pid 1234 --seconds 12
//       --out probe.txt [--fresh]
//     One ordinary gRPC decision, then one HTTP /json decision, every --interval-ms (20), each
//     with a deadline of 1 s, on a kept-alive channel and connection as Envoy would (with --fresh:
//     a new connection for each, as a client arriving during the attack). Writes one line per
//     decision, "d <unix ms> <grpc|http> <latency us> <1 ok | 0 error>", and every 100 ms sluiced's
//     VmRSS, "r <unix ms> <kB>". Stops after --seconds, or once --until-file exists.
//   attack_load flood --grpc ADDR --calls 20000 --descriptors 64 --connections 20 --seconds 5
//     Keeps --calls ShouldRateLimit calls outstanding, spread over --connections channels, each
//     with --descriptors descriptors {user: <value>}; with --unique each value is new and
//     --value-bytes long, else one of --keys values.
//   attack_load idle --port P --count 1000 --seconds 5       idle TCP connections, held
//   attack_load scrape --http ADDR --path /metrics --seconds 5  back-to-back GETs
//   attack_load garbage --grpc ADDR --inflight 64 --seconds 5   bytes that are not a request
//   attack_load headers --http ADDR --header-bytes 32768 --inflight 8 --seconds 5
//
// Each load mode prints one JSON line of what it did (counts by outcome).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

struct Options {
  std::string grpc = "127.0.0.1:8081";
  std::string http = "127.0.0.1:8080";
  std::string path = "/metrics";
  std::string out;
  std::string until_file;
  std::string domain = "bench";
  std::string key = "user";
  int pid = 0;
  int port = 0;
  int seconds = 5;
  int interval_ms = 20;
  int calls = 1000;
  int descriptors = 1;
  int connections = 1;
  int keys = 1000;
  int value_bytes = 4096;
  int count = 1000;
  int inflight = 8;
  int header_bytes = 32768;
  bool unique = false;
  bool fresh = false;
};

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t MicrosSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

// VmRSS of `pid` in kB, or -1.
int64_t RssKb(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

std::shared_ptr<grpc::Channel> Channel(const std::string& target) {
  grpc::ChannelArguments args;
  // A channel of its own (no subchannel shared with another channel of this process), and quick
  // reconnects: the probe measures sluiced, not the client's backoff.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, 64 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

// Runs `ioc` (whose only work is `stream`'s) until its operations are done; the stream's
// expiry (expires_after) bounds them. Asio's synchronous operations would ignore it.
void RunToCompletion(net::io_context& ioc) {
  ioc.restart();
  ioc.run();
}

// Connects `stream` (of `ioc`) to `endpoint` within `deadline`; true on success.
bool Connect(net::io_context& ioc, beast::tcp_stream& stream,
             const net::ip::tcp::endpoint& endpoint, std::chrono::milliseconds deadline) {
  bool connected = false;
  stream.expires_after(deadline);
  stream.async_connect(endpoint, [&connected](beast::error_code ec) { connected = !ec; });
  RunToCompletion(ioc);
  return connected;
}

// One HTTP request on `stream` (connected, of `ioc`) within `deadline`: the status code, or -1.
int HttpExchange(net::io_context& ioc, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                 const http::request<http::string_body>& req, std::chrono::milliseconds deadline,
                 size_t* body_bytes = nullptr) {
  int status = -1;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ULL << 32);
  stream.expires_after(deadline);
  http::async_write(stream, req, [&](beast::error_code ec, size_t) {
    if (ec) return;
    http::async_read(stream, buffer, parser, [&](beast::error_code ec2, size_t) {
      if (ec2) return;
      status = parser.get().result_int();
      if (body_bytes != nullptr) *body_bytes = parser.get().body().size();
    });
  });
  RunToCompletion(ioc);
  return status;
}

net::ip::tcp::endpoint Endpoint(const std::string& target) {
  const size_t colon = target.rfind(':');
  return {net::ip::make_address(target.substr(0, colon)),
          static_cast<uint16_t>(std::stoi(target.substr(colon + 1)))};
}

// ---- probe ----------------------------------------------------------------------------------

class Probe {
 public:
  explicit Probe(const Options& o) : o_(o), out_(o.out) {}

  int Run() {
    if (!out_) {
      std::fprintf(stderr, "attack_load: cannot write %s\n", o_.out.c_str());
      return 1;
    }
    const auto stop = Clock::now() + std::chrono::seconds(o_.seconds);
    std::thread rss([&] {
      while (Clock::now() < stop && !done_.load()) {
        Write("r " + std::to_string(UnixMillis()) + " " + std::to_string(RssKb(o_.pid)));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    auto next = Clock::now();
    while (Clock::now() < stop && !StopFileExists()) {
      Record("grpc", GrpcDecision());
      Record("http", HttpDecision());
      next += std::chrono::milliseconds(o_.interval_ms);
      // A probe late by a slow decision starts the next one at once, without catching up.
      next = std::max(next, Clock::now());
      std::this_thread::sleep_until(next);
    }
    done_.store(true);
    rss.join();
    out_.flush();
    return 0;
  }

 private:
  struct Outcome {
    int64_t start_ms;
    int64_t latency_us;
    bool ok;
  };

  bool StopFileExists() const {
    return !o_.until_file.empty() && access(o_.until_file.c_str(), F_OK) == 0;
  }

  void Write(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    out_ << line << '\n';
  }
  void Record(const char* protocol, const Outcome& r) {
    Write("d " + std::to_string(r.start_ms) + " " + protocol + " " + std::to_string(r.latency_us) +
          " " + (r.ok ? "1" : "0"));
  }

  Outcome GrpcDecision() {
    if (channel_ == nullptr || o_.fresh) {
      channel_ = Channel(o_.grpc);
      stub_ = envoy::service::ratelimit::v3::RateLimitService::NewStub(channel_);
    }
    RateLimitRequest request;
    request.set_domain(o_.domain);
    auto* entry = request.add_descriptors()->add_entries();
    entry->set_key(o_.key);
    entry->set_value("probe");
    RateLimitResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    const int64_t start_ms = UnixMillis();
    const auto start = Clock::now();
    const grpc::Status status = stub_->ShouldRateLimit(&context, request, &response);
    if (o_.fresh) {  // Closed at once: a new client holds no connection between its decisions.
      stub_.reset();
      channel_.reset();
    }
    return {start_ms, MicrosSince(start),
            status.ok() && response.overall_code() == RateLimitResponse::OK};
  }

  Outcome HttpDecision() {
    http::request<http::string_body> req{http::verb::post, "/json", 11};
    req.set(http::field::host, "localhost");
    req.set(http::field::content_type, "application/json");
    req.body() = R"({"domain":")" + o_.domain + R"(","descriptors":[{"entries":[{"key":")" +
                 o_.key + R"(","value":"probe"}]}]})";
    req.prepare_payload();
    const int64_t start_ms = UnixMillis();
    const auto start = Clock::now();
    int status = -1;
    for (int attempt = 0; attempt < 2 && status < 0; ++attempt) {
      // A kept-alive connection the server closed (idle timeout, shutdown) is reopened once.
      if (stream_ == nullptr || o_.fresh || attempt > 0) {
        stream_.reset();
        buffer_.clear();
        auto stream = std::make_unique<beast::tcp_stream>(ioc_);
        if (!Connect(ioc_, *stream, Endpoint(o_.http), std::chrono::seconds(1))) break;
        stream_ = std::move(stream);
      }
      const auto left = std::chrono::milliseconds(1000) -
                        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      if (left.count() <= 0) break;
      status = HttpExchange(ioc_, *stream_, buffer_, req, left);
      if (status < 0) stream_.reset();
    }
    if (o_.fresh) stream_.reset();
    return {start_ms, MicrosSince(start), status == 200};
  }

  const Options& o_;
  std::ofstream out_;
  std::mutex mu_;
  std::atomic<bool> done_{false};
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::ratelimit::v3::RateLimitService::Stub> stub_;
  net::io_context ioc_;
  std::unique_ptr<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
};

// ---- flood: many concurrent ShouldRateLimit calls ---------------------------------------------

int Flood(const Options& o) {
  std::vector<std::unique_ptr<envoy::service::ratelimit::v3::RateLimitService::Stub>> stubs;
  for (int i = 0; i < o.connections; ++i) {
    // Connected before the flood starts: a channel still connecting under thousands of new
    // calls fails them all at once.
    auto channel = Channel(o.grpc);
    channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5));
    stubs.push_back(envoy::service::ratelimit::v3::RateLimitService::NewStub(channel));
  }
  grpc::CompletionQueue cq;
  struct Call {
    grpc::ClientContext context;
    RateLimitResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<RateLimitResponse>> reader;
  };
  std::mt19937_64 rng(UnixMillis());
  uint64_t serial = 0;
  auto value = [&]() {
    if (!o.unique) return "k" + std::to_string(rng() % static_cast<uint64_t>(o.keys));
    // Exactly --value-bytes (sluiced refuses a value over 4,096 bytes), unique by its prefix.
    std::string v = std::to_string(rng()) + "-" + std::to_string(serial++) + "-";
    v.resize(static_cast<size_t>(std::max(o.value_bytes, 48)), 'x');
    return v;
  };
  int next_stub = 0;
  auto issue = [&]() {
    auto* call = new Call();
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    RateLimitRequest request;
    request.set_domain(o.domain);
    for (int d = 0; d < o.descriptors; ++d) {
      auto* e = request.add_descriptors()->add_entries();
      e->set_key(o.key);
      e->set_value(value());
    }
    auto& stub = stubs[static_cast<size_t>(next_stub++ % o.connections)];
    call->reader = stub->AsyncShouldRateLimit(&call->context, request, &cq);
    call->reader->Finish(&call->response, &call->status, call);
  };
  const auto stop = Clock::now() + std::chrono::seconds(o.seconds);
  for (int i = 0; i < o.calls; ++i) issue();
  int64_t ok = 0;
  int64_t errors = 0;
  int64_t exhausted = 0;
  int outstanding = o.calls;
  void* tag = nullptr;
  bool got = false;
  while (outstanding > 0 && cq.Next(&tag, &got)) {
    std::unique_ptr<Call> call(static_cast<Call*>(tag));
    --outstanding;
    if (got && call->status.ok()) {
      ++ok;
    } else if (call->status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++exhausted;
    } else {
      if (errors++ == 0) {
        std::fprintf(stderr, "attack_load: first error: %d %s\n",
                     static_cast<int>(call->status.error_code()),
                     call->status.error_message().c_str());
      }
    }
    if (Clock::now() < stop) {
      issue();
      ++outstanding;
    }
  }
  cq.Shutdown();
  while (cq.Next(&tag, &got)) delete static_cast<Call*>(tag);
  std::printf(
      "{\"mode\":\"flood\",\"answered\":%lld,\"resource_exhausted\":%lld,\"errors\":%lld}\n",
      static_cast<long long>(ok), static_cast<long long>(exhausted),
      static_cast<long long>(errors));
  return 0;
}

// ---- idle connections -------------------------------------------------------------------------

int Idle(const Options& o) {
  std::vector<int> fds;
  for (int i = 0; i < o.count; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(o.port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      break;
    }
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  for (int fd : fds) ::close(fd);
  std::printf("{\"mode\":\"idle\",\"connections\":%zu}\n", fds.size());
  return 0;
}

// ---- back-to-back scrapes ----------------------------------------------------------------------

int Scrape(const Options& o) {
  net::io_context ioc;
  const net::ip::tcp::endpoint endpoint = Endpoint(o.http);
  const auto stop = Clock::now() + std::chrono::seconds(o.seconds);
  int64_t scrapes = 0;
  int64_t errors = 0;
  size_t last_bytes = 0;
  int64_t longest_us = 0;
  while (Clock::now() < stop) {
    beast::tcp_stream stream(ioc);
    if (!Connect(ioc, stream, endpoint, std::chrono::seconds(1))) {
      ++errors;
      continue;
    }
    beast::flat_buffer buffer;
    http::request<http::string_body> req{http::verb::get, o.path, 11};
    req.set(http::field::host, "localhost");
    const auto start = Clock::now();
    const int status =
        HttpExchange(ioc, stream, buffer, req, std::chrono::seconds(10), &last_bytes);
    longest_us = std::max(longest_us, MicrosSince(start));
    status == 200 ? ++scrapes : ++errors;
  }
  std::printf(
      "{\"mode\":\"scrape\",\"scrapes\":%lld,\"errors\":%lld,\"last_bytes\":%zu,"
      "\"longest_ms\":%lld}\n",
      static_cast<long long>(scrapes), static_cast<long long>(errors), last_bytes,
      static_cast<long long>(longest_us / 1000));
  return 0;
}

// ---- garbage protobuf --------------------------------------------------------------------------

int Garbage(const Options& o) {
  auto channel = Channel(o.grpc);
  grpc::GenericStub stub(channel);
  const auto stop = Clock::now() + std::chrono::seconds(o.seconds);
  std::atomic<int64_t> invalid{0};
  std::atomic<int64_t> other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < o.inflight; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
      while (Clock::now() < stop) {
        // Field 1 with wire type 7 (not a wire type), then random bytes.
        std::string bytes = "\x0f";
        for (int i = 0; i < 64; ++i) bytes.push_back(static_cast<char>(rng()));
        grpc::Slice slice(bytes);
        grpc::ByteBuffer request(&slice, 1);
        grpc::ByteBuffer response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        std::promise<grpc::Status> done;
        stub.UnaryCall(&context, "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
                       grpc::StubOptions(), &request, &response,
                       [&done](grpc::Status status) { done.set_value(status); });
        const grpc::Status status = done.get_future().get();
        status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? ++invalid : ++other;
      }
    });
  }
  for (auto& t : threads) t.join();
  std::printf("{\"mode\":\"garbage\",\"invalid_argument\":%lld,\"other\":%lld}\n",
              static_cast<long long>(invalid.load()), static_cast<long long>(other.load()));
  return 0;
}

// ---- oversized headers -------------------------------------------------------------------------

int Headers(const Options& o) {
  const net::ip::tcp::endpoint endpoint = Endpoint(o.http);
  const auto stop = Clock::now() + std::chrono::seconds(o.seconds);
  std::atomic<int64_t> refused{0};
  std::atomic<int64_t> other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < o.inflight; ++t) {
    threads.emplace_back([&] {
      net::io_context ioc;
      const std::string big(static_cast<size_t>(o.header_bytes), 'h');
      while (Clock::now() < stop) {
        beast::tcp_stream stream(ioc);
        if (!Connect(ioc, stream, endpoint, std::chrono::seconds(1))) {
          ++other;
          continue;
        }
        beast::flat_buffer buffer;
        http::request<http::string_body> req{http::verb::post, "/json", 11};
        req.set(http::field::host, "localhost");
        req.set("X-Big", big);
        req.body() = R"({"domain":"bench","descriptors":[]})";
        req.prepare_payload();
        const int status = HttpExchange(ioc, stream, buffer, req, std::chrono::seconds(5));
        status == 431 ? ++refused : ++other;
      }
    });
  }
  for (auto& t : threads) t.join();
  std::printf("{\"mode\":\"headers\",\"answered_431\":%lld,\"other\":%lld}\n",
              static_cast<long long>(refused.load()), static_cast<long long>(other.load()));
  return 0;
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"attack_load: hostile loads for sluiced, and a probe beside them"};
  app.require_subcommand(1);
  auto* probe = app.add_subcommand("probe", "ordinary decisions and sluiced's RSS, to a file");
  probe->add_option("--grpc", o.grpc);
  probe->add_option("--http", o.http);
  probe->add_option("--pid", o.pid)->required();
  probe->add_option("--out", o.out)->required();
  probe->add_option("--interval-ms", o.interval_ms);
  probe->add_option("--until-file", o.until_file, "stop once this file exists");
  probe->add_flag("--fresh", o.fresh, "a new connection for each decision");
  auto* flood = app.add_subcommand("flood", "concurrent ShouldRateLimit calls");
  flood->add_option("--grpc", o.grpc);
  flood->add_option("--calls", o.calls);
  flood->add_option("--descriptors", o.descriptors);
  flood->add_option("--connections", o.connections);
  flood->add_option("--keys", o.keys);
  flood->add_option("--value-bytes", o.value_bytes);
  flood->add_flag("--unique", o.unique, "every value new, --value-bytes long");
  auto* idle = app.add_subcommand("idle", "idle TCP connections");
  idle->add_option("--port", o.port)->required();
  idle->add_option("--count", o.count);
  auto* scrape = app.add_subcommand("scrape", "back-to-back GETs");
  scrape->add_option("--http", o.http);
  scrape->add_option("--path", o.path);
  auto* garbage = app.add_subcommand("garbage", "ShouldRateLimit calls of garbage bytes");
  garbage->add_option("--grpc", o.grpc);
  garbage->add_option("--inflight", o.inflight);
  auto* headers = app.add_subcommand("headers", "requests with oversized headers");
  headers->add_option("--http", o.http);
  headers->add_option("--header-bytes", o.header_bytes);
  headers->add_option("--inflight", o.inflight);
  for (CLI::App* sub : {probe, flood, idle, scrape, garbage, headers}) {
    sub->add_option("--seconds", o.seconds);
    sub->add_option("--domain", o.domain);
  }
  CLI11_PARSE(app, argc, argv);
  o.seconds = std::clamp(o.seconds, 1, 120);
  o.connections = std::max(1, o.connections);
  o.inflight = std::clamp(o.inflight, 1, 256);
  o.keys = std::max(1, o.keys);
  o.header_bytes = std::clamp(o.header_bytes, 1, 60'000);  // Beast refuses a field over 64 KB.
  // Debian's Abseil checks lock order on every absl::Mutex lock (built without NDEBUG); gRPC
  // locks several per call.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Enough descriptors for the idle connections, up to the hard limit.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (probe->parsed()) return Probe(o).Run();
  if (flood->parsed()) return Flood(o);
  if (idle->parsed()) return Idle(o);
  if (scrape->parsed()) return Scrape(o);
  if (garbage->parsed()) return Garbage(o);
  return Headers(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attack_load: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "attack_load: unknown exception\n");
  }
  return 1;
}
