#include "src/server/grpc/h2/grpc_h2_connection.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "src/server/grpc/h2/grpc_framing.h"

namespace sluice::server::h2 {

namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kHealthCheck = "/grpc.health.v1.Health/Check";
// Bytes gathered from nghttp2 into one write.
constexpr size_t kWriteChunk = 64 << 10;

// A header whose name and value outlive the frame (literals).
nghttp2_nv Static(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

// A header whose value nghttp2 copies.
nghttp2_nv Copied(std::string_view name, const std::string& value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NO_COPY_NAME};
}

std::string PeerName(const Connection::Socket& socket) {
  boost::system::error_code ec;
  const net::ip::tcp::endpoint e = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  return e.address().is_v4() ? absl::StrCat("ipv4:", e.address().to_string(), ":", e.port())
                             : absl::StrCat("ipv6:[", e.address().to_string(), "]:", e.port());
}

// +-10%, so that connections opened together do not all go away together.
std::chrono::milliseconds Jittered(std::chrono::milliseconds d) {
  thread_local std::minstd_rand random{std::random_device{}()};
  std::uniform_real_distribution<double> factor(0.9, 1.1);
  return std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(d.count()) * factor(random)));
}

}  // namespace

void GrpcH2Server::Shared::Log(std::string_view line) const {
  if (options.log) {
    options.log(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

nghttp2_session_callbacks* Connection::Callbacks() {
  // Built once; nghttp2 copies them into each session.
  static nghttp2_session_callbacks* const callbacks = [] {
    nghttp2_session_callbacks* c = nullptr;
    nghttp2_session_callbacks_new(&c);
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, &OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(c, &OnHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, &OnFrame);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, &OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, &OnStreamClose);
    nghttp2_session_callbacks_set_on_frame_send_callback(c, &OnFrameSent);
    return c;
  }();
  return callbacks;
}

Connection::Connection(Socket socket, std::shared_ptr<net::io_context> context,
                       std::shared_ptr<GrpcH2Server::Shared> shared)
    : context_(std::move(context)),
      socket_(std::move(socket)),
      shared_(std::move(shared)),
      options_(shared_->options),
      peer_(PeerName(socket_)),
      timer_(socket_.get_executor()),
      last_active_(Clock::now()) {
  nghttp2_session_server_new(&session_, Callbacks(), this);
  const std::array<nghttp2_settings_entry, 2> settings = {
      {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams},
       {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(options_.max_header_bytes)}}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  if (options_.max_connection_age.count() > 0) {
    age_at_ = last_active_ + Jittered(options_.max_connection_age);
  }
  if (options_.first_bytes_timeout.count() > 0) {
    silent_until_ = last_active_ + options_.first_bytes_timeout;
  }
}

Connection::~Connection() {
  nghttp2_session_del(session_);
  // Deleting a session closes no stream through OnStreamClose, so the bodies of requests left
  // unfinished are given back here, or they would count against max_buffered_bytes for good.
  shared_->buffered.fetch_sub(buffered_);
  {
    internal::MutexLock lock(&shared_->mu);
    --shared_->open;
  }
  shared_->closed.notify_all();
}

void Connection::Start() {
  net::dispatch(executor(), [self = shared_from_this()] {
    self->Flush();
    self->Read();
    self->ArmTimer();
  });
}

void Connection::Drain() {
  net::dispatch(executor(), [self = shared_from_this()] {
    if (self->draining_ || self->closed_) return;
    self->draining_ = true;
    // Calls up to the last stream seen are answered; later ones the client retries elsewhere.
    nghttp2_submit_goaway(self->session_, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(self->session_), NGHTTP2_NO_ERROR,
                          nullptr, 0);
    if (!self->in_recv_) self->Flush();
  });
}

void Connection::Abort() {
  net::dispatch(executor(), [self = shared_from_this()] { self->Close(); });
}

void Responder::operator()(absl::StatusOr<std::string> response) && {
  std::shared_ptr<Connection> connection = connection_.lock();
  if (connection == nullptr) return;  // Gone: nobody to answer.
  connection->Answer(stream_id_, std::move(response));
}

void Connection::Answer(int32_t stream_id, absl::StatusOr<std::string> response) {
  if (executor().running_in_this_thread()) {
    AnswerHere(stream_id, std::move(response));
    if (!in_recv_) Flush();
    return;
  }
  // From another thread: the answers wait in one batch, and one handler on this connection's
  // thread writes them all. A handler per answer would fill the thread's queue with a flooding
  // connection's answers, and every other connection's reads and answers would wait behind them.
  {
    internal::MutexLock lock(&answers_mu_);
    // Answers already waiting: the handler that takes them is posted.
    const bool handler_posted = !answers_.empty();
    answers_.push_back(PendingAnswer{stream_id, std::move(response)});
    if (handler_posted) return;
  }
  net::post(executor(), [self = shared_from_this()] { self->AnswerPending(); });
}

void Connection::AnswerPending() {
  std::vector<PendingAnswer> answers;
  {
    internal::MutexLock lock(&answers_mu_);
    answers.swap(answers_);
  }
  for (PendingAnswer& a : answers) AnswerHere(a.stream_id, std::move(a.response));
  if (!in_recv_) Flush();
}

void Connection::AnswerHere(int32_t stream_id, absl::StatusOr<std::string> response) {
  Stream* stream = Find(stream_id);
  if (stream == nullptr || stream->answered || closed_) return;
  if (stream->deadline.has_value() && Clock::now() > *stream->deadline) {
    response = absl::DeadlineExceededError("deadline exceeded");
  }
  Reply(stream_id, *stream, std::move(response));
}

Connection::Stream* Connection::Find(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : &it->second;
}

int Connection::OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Connection*>(user);
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    self->streams_.try_emplace(frame->hd.stream_id);
    self->last_active_ = Clock::now();
  }
  return 0;
}

int Connection::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                         size_t name_length, const uint8_t* value, size_t value_length, uint8_t,
                         void* user) {
  auto* self = static_cast<Connection*>(user);
  Stream* stream = self->Find(frame->hd.stream_id);
  if (stream == nullptr) return 0;
  // HPACK's accounting (RFC 7541 4.1), over request headers and trailers together.
  stream->header_bytes += name_length + value_length + 32;
  if (stream->header_bytes > self->options_.max_header_bytes) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // Resets the stream.
  }
  if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), name_length);
  const std::string_view v(reinterpret_cast<const char*>(value), value_length);
  if (n == ":path") {
    stream->path.assign(v);
  } else if (n == ":method") {
    stream->post = v == "POST";
  } else if (n == "content-type") {
    // "application/grpc", "application/grpc+proto", "application/grpc;...".
    stream->grpc_content_type =
        v.starts_with("application/grpc") && (v.size() == 16 || v[16] == '+' || v[16] == ';');
  } else if (n == "grpc-timeout") {
    if (std::optional<std::chrono::nanoseconds> t = ParseGrpcTimeout(v)) {
      stream->deadline =
          Clock::now() + std::min<std::chrono::nanoseconds>(*t, std::chrono::hours(24 * 365));
    }
  }
  return 0;
}

int Connection::OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Connection*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
  Stream* stream = self->Find(frame->hd.stream_id);
  if (stream == nullptr) return 0;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    self->OnRequestHeaders(frame->hd.stream_id, *stream);
  }
  if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    self->OnRequestEnd(frame->hd.stream_id, *stream);
  }
  return 0;
}

void Connection::OnRequestHeaders(int32_t stream_id, Stream& stream) {
  if (!stream.post) return ReplyHttp(stream_id, stream, "405");
  if (!stream.grpc_content_type) return ReplyHttp(stream_id, stream, "415");
  if (stream.path == kHealthCheck) {
    stream.kind = Stream::Kind::kHealthCheck;
    return;
  }
  auto it = shared_->methods.find(stream.path);
  if (it == shared_->methods.end()) {
    return Reply(stream_id, stream,
                 absl::UnimplementedError(absl::StrCat("unknown method ", stream.path)));
  }
  stream.kind = Stream::Kind::kMethod;
  stream.method = &it->second;
}

int Connection::OnData(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data,
                       size_t length, void* user) {
  auto* self = static_cast<Connection*>(user);
  Stream* stream = self->Find(stream_id);
  if (stream == nullptr || stream->answered) return 0;  // The rest of a refused request.
  stream->body.append(reinterpret_cast<const char*>(data), length);
  self->buffered_ += length;
  const size_t all = self->shared_->buffered.fetch_add(length) + length;
  const std::optional<uint32_t> declared = DeclaredMessageLength(stream->body);
  if ((declared.has_value() && *declared > self->options_.max_message_bytes) ||
      stream->body.size() > self->options_.max_message_bytes + kMessagePrefixBytes) {
    self->Reply(stream_id, *stream,
                absl::ResourceExhaustedError(absl::StrCat("request message larger than max (",
                                                          declared.value_or(0), " vs. ",
                                                          self->options_.max_message_bytes, ")")));
  } else if (self->buffered_ > self->options_.max_connection_buffer_bytes) {
    self->Reply(stream_id, *stream,
                absl::ResourceExhaustedError("too many request bytes buffered on this connection"));
  } else if (all > self->options_.max_buffered_bytes) {
    self->Reply(stream_id, *stream,
                absl::ResourceExhaustedError("too many request bytes buffered on this server"));
  }
  return 0;
}

void Connection::OnRequestEnd(int32_t stream_id, Stream& stream) {
  if (stream.answered) return;
  absl::StatusOr<std::string_view> message = UnaryMessage(stream.body, options_.max_message_bytes);
  if (!message.ok()) return Reply(stream_id, stream, message.status());
  if (stream.kind == Stream::Kind::kHealthCheck) {
    absl::StatusOr<std::string> service = HealthCheckService(*message);
    if (!service.ok()) return Reply(stream_id, stream, service.status());
    const std::vector<std::string>& known = options_.health_services;
    if (std::find(known.begin(), known.end(), *service) == known.end()) {
      return Reply(stream_id, stream, absl::NotFoundError("unknown service"));
    }
    return Reply(stream_id, stream,
                 HealthCheckResponse(shared_->serving.load() ? ServingStatus::kServing
                                                             : ServingStatus::kNotServing));
  }
  // The method may answer before it returns (Answer() finds the stream answered then).
  (*stream.method)(*message, peer_, Responder(weak_from_this(), stream_id));
  if (Stream* s = Find(stream_id)) ReleaseBody(*s);
}

void Connection::ReleaseBody(Stream& stream) {
  buffered_ -= stream.body.size();
  shared_->buffered.fetch_sub(stream.body.size());
  std::string().swap(stream.body);
}

void Connection::Reply(int32_t stream_id, Stream& stream, absl::StatusOr<std::string> response) {
  stream.answered = true;
  ReleaseBody(stream);
  if (response.ok()) {
    stream.response = FramedMessage(*response);
    const std::array<nghttp2_nv, 2> headers = {Static(":status", "200"),
                                               Static("content-type", "application/grpc")};
    nghttp2_data_provider provider{};
    provider.source.ptr = &stream;
    provider.read_callback = &ReadResponse;
    nghttp2_submit_response(session_, stream_id, headers.data(), headers.size(), &provider);
    return;
  }
  // Trailers-only: the status travels in the one HEADERS frame that ends the stream.
  const std::string code = absl::StrCat(static_cast<int>(response.status().code()));
  const absl::string_view text = response.status().message();
  const std::string message = PercentEncodeGrpcMessage(std::string_view(text.data(), text.size()));
  const std::array<nghttp2_nv, 4> headers = {
      Static(":status", "200"), Static("content-type", "application/grpc"),
      Copied("grpc-status", code), Copied("grpc-message", message)};
  nghttp2_submit_response(session_, stream_id, headers.data(), message.empty() ? 3 : 4, nullptr);
}

void Connection::ReplyHttp(int32_t stream_id, Stream& stream, const char* status) {
  stream.answered = true;
  ReleaseBody(stream);
  const std::array<nghttp2_nv, 1> headers = {Static(":status", status)};
  nghttp2_submit_response(session_, stream_id, headers.data(), headers.size(), nullptr);
}

ssize_t Connection::ReadResponse(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                                 size_t length, uint32_t* flags, nghttp2_data_source* source,
                                 void*) {
  auto* stream = static_cast<Stream*>(source->ptr);
  const size_t n = std::min(length, stream->response.size() - stream->sent);
  std::copy_n(stream->response.data() + stream->sent, n, buf);
  stream->sent += n;
  if (stream->sent == stream->response.size()) {
    // The stream ends with the trailers rather than with this DATA frame.
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    const std::array<nghttp2_nv, 1> trailers = {Static("grpc-status", "0")};
    nghttp2_submit_trailer(session, stream_id, trailers.data(), trailers.size());
  }
  return static_cast<ssize_t>(n);
}

// A call answered before its request ended (refused early: too large, unknown method) asks the
// client to stop sending it (RFC 9113 8.1: RST_STREAM NO_ERROR after a complete response).
int Connection::OnFrameSent(nghttp2_session* session, const nghttp2_frame* frame, void*) {
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
      nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0) {
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
  }
  return 0;
}

int Connection::OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
  auto* self = static_cast<Connection*>(user);
  auto it = self->streams_.find(stream_id);
  if (it == self->streams_.end()) return 0;
  self->buffered_ -= it->second.body.size();
  self->shared_->buffered.fetch_sub(it->second.body.size());
  self->streams_.erase(it);
  if (self->streams_.empty()) self->last_active_ = Clock::now();
  return 0;
}

void Connection::Read() {
  socket_.async_read_some(
      net::buffer(in_), [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
        if (ec || self->closed_) return self->Close();
        if (!self->spoke_.load(std::memory_order_relaxed)) {
          self->spoke_.store(true, std::memory_order_relaxed);
          self->silent_until_.reset();
        }
        self->in_recv_ = true;
        const ssize_t rv = nghttp2_session_mem_recv(self->session_, self->in_.data(), n);
        self->in_recv_ = false;
        // On a protocol error nghttp2 has queued a GOAWAY; it is sent, then the connection closes.
        if (rv < 0) self->draining_ = true;
        self->Flush();
        if (rv >= 0 && !self->closed_) self->Read();
      });
}

void Connection::Flush() {
  if (writing_ || closed_) return;
  out_.clear();
  while (out_.size() < kWriteChunk) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) return Close();
    if (n == 0) break;
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (out_.empty()) {
    const bool nothing_left =
        nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
    if (nothing_left || (draining_ && streams_.empty())) Close();
    return;
  }
  writing_ = true;
  net::async_write(socket_, net::buffer(out_),
                   [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                     self->writing_ = false;
                     if (ec) return self->Close();
                     self->Flush();
                   });
}

void Connection::ArmTimer() {
  if (closed_) return;
  const Clock::time_point now = Clock::now();
  Clock::time_point next = Clock::time_point::max();
  if (options_.max_connection_idle.count() > 0 && !draining_) {
    next = (streams_.empty() ? last_active_ : now) + options_.max_connection_idle;
  }
  if (age_at_.has_value()) next = std::min(next, *age_at_);
  if (grace_at_.has_value()) next = std::min(next, *grace_at_);
  if (silent_until_.has_value()) next = std::min(next, *silent_until_);
  if (next == Clock::time_point::max()) return;
  timer_.expires_at(next);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && !self->closed_) self->OnTimer();
  });
}

void Connection::OnTimer() {
  const Clock::time_point now = Clock::now();
  if (silent_until_.has_value() && now >= *silent_until_) {
    shared_->silent_closed.fetch_add(1);
    return Close();
  }
  if (grace_at_.has_value() && now >= *grace_at_) return Close();
  if (age_at_.has_value() && now >= *age_at_) {
    age_at_.reset();
    if (options_.max_connection_age_grace.count() > 0) {
      grace_at_ = now + options_.max_connection_age_grace;
    }
    Drain();
  } else if (options_.max_connection_idle.count() > 0 && streams_.empty() &&
             now - last_active_ >= options_.max_connection_idle) {
    Drain();
  }
  ArmTimer();
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  boost::system::error_code ignored;
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace sluice::server::h2
