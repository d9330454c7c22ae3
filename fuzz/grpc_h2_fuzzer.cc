// Fuzz target: the nghttp2 gRPC engine (src/server/grpc/h2/), from a client's bytes on a TCP
// connection to what the server answers and what it still holds once the connection is gone.
//
// Input: the first byte picks how the rest reaches a GrpcH2Server (started once for the process,
// with small limits) on a new loopback connection:
//   0  as raw bytes;  1  raw, after the client preface;  2  raw, after the preface and an empty
//      SETTINGS frame, so that the input's first bytes are parsed as a frame;
//   3  as a script of client actions on an nghttp2 client session (Op below): requests whose
//      method, path, content-type, headers, grpc-timeout, body and trailers come from the input,
//      more DATA, RST_STREAM, PING, SETTINGS, WINDOW_UPDATE, raw bytes, and exchanges with the
//      server in between. Valid frames get past frame parsing into the gRPC layer.
// Then the client half-closes and reads until the server closes.
//
// Properties:
// - nothing crashes (ASan, UBSan), and the server never hangs: it closes the connection within
//   kBound of the client's half-close, and never stops both reading and writing for kBound;
// - in a script without raw bytes: every request the client ended is answered or reset within
//   kBound, or the server gave up on the connection with a GOAWAY error; everything the server
//   sends is valid HTTP/2 (the client session accepts it); every answer is 405, 415 or 200 with
//   content-type application/grpc and exactly one grpc-status, either trailers-only (an error)
//   or after the message (OK), and an OK echo is the request's own body;
// - bounded: once the connection is gone, the server holds neither it nor any of its request
//   bytes (Stats() back to the ballast's, below).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "fuzz/fuzz_support.h"
#include "fuzz/grpc_h2_fuzz_client.h"
#include <nghttp2/nghttp2.h>

#include "src/server/grpc/h2/grpc_framing.h"
#include "src/server/grpc/h2/grpc_h2_server.h"

namespace sluice::fuzz {
namespace {

using server::h2::FramedMessage;
using server::h2::GrpcH2Server;
using server::h2::GrpcH2ServerOptions;
using server::h2::GrpcH2ServerStats;
using server::h2::Responder;
using server::h2::UnaryMethod;
using Fields = H2FuzzClient::Fields;
using Stream = H2FuzzClient::Stream;

// Answers at once with the request.
constexpr std::string_view kEcho = "/t.S/Echo";
// Answers with the request from another thread, maybe after its stream or connection is gone.
constexpr std::string_view kLater = "/t.S/Later";
// Request bytes a ballast connection holds for the life of the process (below).
constexpr size_t kBallastBytes = 1000;
// Client bytes per input at most: a few input bytes can ask for a 16 KB header.
constexpr size_t kMaxWritten = 256 << 10;

// Small enough for short inputs to reach every bound. With the ballast's 1,000 bytes held, a
// connection holding 1,049 to 1,536 request bytes meets the server-wide bound, and one holding
// more its own.
GrpcH2ServerOptions Options() {
  return {.threads = 1,
          .max_concurrent_streams = 8,
          .max_message_bytes = 1024,
          .max_header_bytes = 1024,
          .max_connection_buffer_bytes = 1536,
          .max_buffered_bytes = 2048,
          .max_connection_idle = std::chrono::milliseconds(0),  // Never: the ballast stays.
          .health_services = {"", "ratelimit"},
          .log = [](std::string_view) {}};
}

// Answers kLater's calls in order from a thread of its own.
class LaterAnswers {
 public:
  // Never destroyed (see Harness), so the thread may outlive main().
  LaterAnswers() {
    std::thread([this] { Run(); }).detach();
  }

  void Add(std::string request, Responder respond) {
    {
      std::lock_guard lock(mu_);
      calls_.emplace_back(std::move(request), std::move(respond));
    }
    added_.notify_one();
  }

 private:
  void Run() {
    for (;;) {
      std::unique_lock lock(mu_);
      added_.wait(lock, [this] { return !calls_.empty(); });
      auto [request, respond] = std::move(calls_.front());
      calls_.pop_front();
      lock.unlock();
      std::move(respond)(std::move(request));
    }
  }

  std::mutex mu_;
  std::condition_variable added_;
  std::deque<std::pair<std::string, Responder>> calls_;
};

// Polls `condition` for up to kBound: the server's threads change what Stats() reads, and signal
// nothing a caller could wait on.
bool Eventually(const std::function<bool()>& condition) {
  const auto until = std::chrono::steady_clock::now() + kBound;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

// The server, and a ballast connection holding an unfinished request of kBallastBytes, so that a
// fuzzed connection meets the server-wide bound on request bytes before its own.
struct Harness {
  Harness() {
    absl::flat_hash_map<std::string, UnaryMethod> methods;
    methods[std::string(kEcho)] = [](std::string_view request, const std::string&,
                                     Responder respond) {
      std::move(respond)(std::string(request));
    };
    methods[std::string(kLater)] = [this](std::string_view request, const std::string&,
                                          Responder respond) {
      later.Add(std::string(request), std::move(respond));
    };
    server = std::make_unique<GrpcH2Server>(Options(), std::move(methods));
    const absl::Status started = server->Start();
    SLUICE_FUZZ_CHECK(started.ok(), started);
    ballast = std::make_unique<H2FuzzClient>(server->port());
    nghttp2_submit_settings(ballast->session(), NGHTTP2_FLAG_NONE, nullptr, 0);
    Stream held;
    held.body = FramedMessage(std::string(kBallastBytes, 'b')).substr(0, kBallastBytes);
    ballast->Submit({{":method", "POST"},
                     {":scheme", "http"},
                     {":authority", "localhost"},
                     {":path", std::string(kEcho)},
                     {"content-type", "application/grpc"}},
                    std::move(held));
    SLUICE_FUZZ_CHECK(ballast->Send(), "the ballast could not write");
    SLUICE_FUZZ_CHECK(
        Eventually([this] { return server->Stats().buffered_request_bytes == kBallastBytes; }),
        "the ballast's request never arrived");
  }

  LaterAnswers later;
  std::unique_ptr<GrpcH2Server> server;
  std::unique_ptr<H2FuzzClient> ballast;
};

// Never destroyed: its threads run until the process exits.
Harness& TheHarness() {
  static Harness* const harness = new Harness();
  return *harness;
}

// One client action of a script; the first byte of each picks it.
enum class Op : uint8_t {
  kRequest,
  kMoreData,
  kReset,
  kPing,
  kSettings,
  kWindowUpdate,
  kRaw,
  kExchange,
  kCount
};

// A request from two bytes of shape, then the strings they ask for.
void SubmitRequest(H2FuzzClient& client, FuzzInput& in) {
  const uint8_t shape = in.Byte();
  const uint8_t extras = in.Byte();
  static constexpr std::string_view kPaths[] = {kEcho,
                                                kLater,
                                                "/grpc.health.v1.Health/Check",
                                                "/grpc.health.v1.Health/Watch",
                                                "/t.S/Other",
                                                "",
                                                kEcho,
                                                kLater};
  std::string path(kPaths[(shape >> 2) & 7]);
  if (path.empty()) path = in.LengthPrefixed(64);
  Fields headers = {{":method", (shape & 3) == 3 ? "GET" : "POST"}, {":path", path}};
  if ((extras & 0x80) == 0) {  // Without them the request is malformed.
    headers.push_back({":scheme", "http"});
    headers.push_back({":authority", "localhost"});
  }
  switch ((shape >> 5) & 3) {
    case 0:
      headers.push_back({"content-type", "application/grpc"});
      break;
    case 1:
      headers.push_back({"content-type", "application/grpc+proto"});
      break;
    case 2:
      headers.push_back({"content-type", std::string(in.LengthPrefixed(32))});
      break;
    default:
      break;
  }
  for (int i = 0; i < (extras & 3); ++i) {
    std::string name(in.LengthPrefixed(16));
    headers.push_back({std::move(name), std::string(in.LengthPrefixed(64))});
  }
  if ((extras & 0x04) != 0) headers.push_back({"grpc-timeout", std::string(in.LengthPrefixed(12))});
  // Up to 16 KB: past max_header_bytes from 16 * 64 on.
  if ((extras & 0x08) != 0) headers.push_back({"x-big", std::string(in.Byte() * 64, 'h')});
  Stream s;
  s.echo = path == kEcho || path == kLater;
  s.end = (shape & 0x80) != 0;
  s.trailers = (extras & 0x20) != 0;
  if ((extras & 0x40) != 0) {
    // Up to 2 KB: past the message bound, and with another one past the buffered bounds.
    s.body = FramedMessage(std::string(in.Byte() * 8, 'm'));
  } else if ((extras & 0x10) != 0) {
    s.body = FramedMessage(in.LengthPrefixed(255));
  } else {
    s.body = in.LengthPrefixed(255);
  }
  client.Submit(headers, std::move(s));
}

// The stream a byte of the input names, among those submitted.
Stream* Pick(H2FuzzClient& client, FuzzInput& in) {
  const uint8_t i = in.Byte();
  if (client.streams().empty()) return nullptr;
  return &client.streams()[i % client.streams().size()];
}

bool AllEndedAreClosed(const H2FuzzClient& client) {
  return std::all_of(client.streams().begin(), client.streams().end(),
                     [](const Stream& s) { return !s.ended || s.closed; });
}

// Sends what is queued and reads until every request the client ended is answered. After raw
// bytes it only sends: the server may rightly be waiting for the rest of a frame they began.
void Exchange(H2FuzzClient& client, bool raw) {
  if (raw) {
    SLUICE_FUZZ_CHECK(client.Send(), "the server read nothing for " << kBound.count() << " s");
    return;
  }
  const bool in_time = client.Pump([&client] { return AllEndedAreClosed(client); });
  SLUICE_FUZZ_CHECK(
      in_time, "requests unanswered for " << kBound.count() << " s (eof " << client.eof() << ")");
  SLUICE_FUZZ_CHECK(client.recv_error().empty(),
                    "the server sent invalid HTTP/2: " << client.recv_error());
  SLUICE_FUZZ_CHECK(AllEndedAreClosed(client) || client.goaway().value_or(0) != NGHTTP2_NO_ERROR,
                    "the server closed the connection with requests unanswered and no error");
}

std::optional<std::string> Value(const Fields& fields, std::string_view name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return std::nullopt;
}

size_t Count(const Fields& fields, std::string_view name) {
  return std::count_if(fields.begin(), fields.end(),
                       [name](const auto& f) { return f.first == name; });
}

// What every complete answer looks like (see the top of the file).
void CheckAnswers(const H2FuzzClient& client) {
  for (const Stream& s : client.streams()) {
    if (!s.closed || s.reset || s.error != NGHTTP2_NO_ERROR || s.answer.empty()) continue;
    const Fields& head = s.answer.front();
    const std::string status = Value(head, ":status").value_or("none");
    SLUICE_FUZZ_CHECK(status == "200" || status == "405" || status == "415",
                      "stream " << s.id << ": :status " << status);
    if (status != "200") {
      SLUICE_FUZZ_CHECK(s.answer.size() == 1 && s.data.empty(),
                        "stream " << s.id << ": " << status << " with more than its headers");
      continue;
    }
    SLUICE_FUZZ_CHECK(
        Value(head, "content-type") == "application/grpc",
        "stream " << s.id << ": content-type " << Value(head, "content-type").value_or("none"));
    const size_t statuses =
        Count(head, "grpc-status") + (s.answer.size() > 1 ? Count(s.answer[1], "grpc-status") : 0);
    SLUICE_FUZZ_CHECK(statuses == 1, "stream " << s.id << ": " << statuses << " grpc-status");
    if (const std::optional<std::string> code = Value(head, "grpc-status")) {
      SLUICE_FUZZ_CHECK(s.answer.size() == 1 && s.data.empty() && *code != "0",
                        "stream " << s.id << ": trailers-only " << *code << " with more");
      continue;
    }
    SLUICE_FUZZ_CHECK(s.answer.size() == 2 && Value(s.answer[1], "grpc-status") == "0",
                      "stream " << s.id << ": a message without OK trailers");
    SLUICE_FUZZ_CHECK(!s.echo || s.data == s.body, "stream " << s.id << ": echo of "
                                                             << Printable(s.body) << " is "
                                                             << Printable(s.data));
  }
}

// Returns whether raw bytes went in.
bool RunScript(H2FuzzClient& client, FuzzInput& in) {
  nghttp2_session* session = client.session();
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
  bool raw = false;
  while (!in.empty() && !client.broken() && !client.eof() && client.written() < kMaxWritten) {
    switch (static_cast<Op>(in.Byte() % static_cast<uint8_t>(Op::kCount))) {
      case Op::kRequest:
        SubmitRequest(client, in);
        break;
      case Op::kMoreData:
        if (Stream* s = Pick(client, in); s != nullptr && !s->end) {
          s->body.append(in.LengthPrefixed(255));
          s->end = (in.Byte() & 1) != 0;
          nghttp2_session_resume_data(session, s->id);
        }
        break;
      case Op::kReset:
        if (Stream* s = Pick(client, in)) {
          nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id, in.Byte() % 14);
          s->reset = true;
        }
        break;
      case Op::kPing:
        nghttp2_submit_ping(session, NGHTTP2_FLAG_NONE, nullptr);
        break;
      case Op::kSettings: {
        // A window of at least 256: with 0 the server could rightly never send an answer.
        const nghttp2_settings_entry settings[] = {
            {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, in.Byte() * 64u},
            {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (in.Byte() + 1u) * 256u}};
        nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, std::size(settings));
        break;
      }
      case Op::kWindowUpdate:
        nghttp2_submit_window_update(session, NGHTTP2_FLAG_NONE, 0, in.Byte() * 256 + 1);
        break;
      case Op::kRaw:
        raw = true;
        SLUICE_FUZZ_CHECK(client.Send() && client.Write(in.LengthPrefixed(255)),
                          "the server read nothing for " << kBound.count() << " s");
        break;
      case Op::kExchange:
      case Op::kCount:
        Exchange(client, raw);
        break;
    }
  }
  Exchange(client, raw);
  return raw;
}

// Once the connection is gone, nothing of it stays: only the ballast is open and holds bytes.
void CheckServerLetGo(const GrpcH2Server& server) {
  GrpcH2ServerStats stats;
  const bool settled = Eventually([&] {
    stats = server.Stats();
    return stats.open_connections == 1 && stats.buffered_request_bytes == kBallastBytes;
  });
  SLUICE_FUZZ_CHECK(settled, "after the connection: " << stats.open_connections << " open, "
                                                      << stats.buffered_request_bytes
                                                      << " request bytes held (the ballast: 1, "
                                                      << kBallastBytes << ")");
}

}  // namespace
}  // namespace sluice::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice::fuzz;  // NOLINT(google-build-using-namespace): a C entry point.
  const Harness& harness = TheHarness();
  FuzzInput in(data, size);
  const uint8_t mode = in.Byte() % 4;
  {
    H2FuzzClient client(harness.server->port());
    bool raw = true;
    if (mode == 3) {
      raw = RunScript(client, in);
    } else {
      client.set_parse(false);
      std::string bytes;
      if (mode >= 1) bytes = NGHTTP2_CLIENT_MAGIC;
      if (mode == 2) bytes += std::string_view("\0\0\0\4\0\0\0\0\0", 9);  // SETTINGS, no entries.
      bytes += in.Rest();
      SLUICE_FUZZ_CHECK(client.Write(bytes),
                        "the server read nothing for " << kBound.count() << " s");
    }
    SLUICE_FUZZ_CHECK(client.AwaitClose(), "the server kept the connection "
                                               << kBound.count()
                                               << " s after the client's half-close");
    // Answers that arrived before the close count too: early refusals of unfinished requests.
    if (!raw) {
      SLUICE_FUZZ_CHECK(client.recv_error().empty(),
                        "the server sent invalid HTTP/2: " << client.recv_error());
      CheckAnswers(client);
    }
  }
  CheckServerLetGo(*harness.server);
  return 0;
}
