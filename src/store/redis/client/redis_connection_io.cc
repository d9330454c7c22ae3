// RedisConnection: submitting, writing, reading and deadlines. See redis_connection.h.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "sluice/clock.h"

#include "src/store/redis/client/redis_connection.h"
#include "src/store/redis/client/redis_error.h"
#include "src/util/strings.h"

namespace sluice::internal {
namespace {

TimePoint Now() { return Clock::Real().Now(); }

// Adds to a counter that only this connection's I/O thread writes: no read-modify-write
// instruction needed, readers (Stats()) just load it.
void Bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// A RESP2 pub/sub message: ["message", channel, payload] or ["pmessage", pattern, channel,
// payload]. On a subscribed connection no command reply has this shape.
bool IsPublishedMessage(const RedisReply& reply) {
  if (!reply.is_array() || reply.elements().size() < 3) return false;
  const std::string& kind = reply.elements()[0].str();
  return kind == "message" || kind == "pmessage";
}

}  // namespace

void RedisConnection::Submit(RedisCommand command, std::chrono::milliseconds timeout,
                             RedisReplyCallback done) {
  const TimePoint deadline = Now() + timeout;
  absl::Status rejected;
  RedisReplyCallback rejected_done;
  bool wake = false;
  {
    MutexLock lock(&mu_);
    if (state_ == State::kBackoff) {
      rejected = NotConnectedError(command.name(), config_.host_port, last_error_);
    } else if (state_ == State::kClosed) {
      rejected = absl::UnavailableError(
          absl::StrCat("redis ", AbslView(command.name()), ": client shut down"));
    } else if (submitted_.size() >= config_.max_queued_commands) {
      rejected = absl::UnavailableError(
          absl::StrCat("redis ", AbslView(command.name()), ": ", submitted_.size(),
                       " commands already queued for ", config_.host_port));
    }
    if (!rejected.ok()) {
      rejected_done = std::move(done);
    } else {
      submitted_.push_back(Request{.command = std::move(command),
                                   .done = std::move(done),
                                   .deadline = deadline,
                                   .timeout = timeout});
      submitted_earliest_ = std::min(submitted_earliest_, deadline);
      // Wake the I/O thread only if nobody is going to look at the queue anyway, or if this
      // command is due before the deadline timer fires (a shorter per-call timeout).
      if ((!flush_pending_ || deadline < timer_at_) && !wake_posted_) {
        flush_pending_ = true;
        wake_posted_ = true;
        wake = true;
      }
    }
  }
  if (wake) boost::asio::post(io_, [this, self = shared_from_this()] { OnWake(); });
  if (rejected_done) {
    rejected_.fetch_add(1, std::memory_order_relaxed);
    std::move(rejected_done)(std::move(rejected));
  }
}

void RedisConnection::OnWake() {
  TimePoint earliest;
  {
    MutexLock lock(&mu_);
    wake_posted_ = false;
    earliest = submitted_earliest_;
  }
  if (closing_) return;
  ArmDeadlineTimer(earliest);
  TryWrite();
}

// Moves everything submitted into one write buffer, unless a write is already in flight: its
// completion comes back here, so commands arriving meanwhile are coalesced into the next write.
void RedisConnection::TryWrite() {
  if (closing_ || writing_ || !established_) return;
  {
    MutexLock lock(&mu_);
    batch_.swap(submitted_);
    flush_pending_ = false;
    submitted_earliest_ = TimePoint::max();
  }
  if (batch_.empty()) return;
  const TimePoint now = Now();
  std::string& buf = transport_->write_buf;
  const bool was_idle = inflight_.empty();
  TimePoint earliest = TimePoint::max();
  size_t count = 0;
  for (Request& r : batch_) {
    if (r.deadline <= now) {
      // Expired while queued: safe to drop, as it never reached the server.
      Bump(timeouts_);
      std::move(r.done)(CommandTimeoutError(r.command.name(), r.timeout, /*sent=*/false));
      continue;
    }
    buf.append(r.command.resp());
    earliest = std::min(earliest, r.deadline);
    count += r.command.reply_count();
    inflight_.push_back(std::move(r));
  }
  batch_.clear();
  if (count == 0) return;
  in_flight_.store(inflight_.size(), std::memory_order_relaxed);
  if (was_idle) last_progress_ = last_reply_ = now;
  ArmDeadlineTimer(std::min(earliest, last_progress_ + config_.stall_timeout));
  WriteBuffer(count);
}

void RedisConnection::WriteBuffer(size_t commands) {
  writing_ = true;
  Bump(writes_);
  Bump(commands_sent_, commands);
  Transport& t = *transport_;
  WithStream(t, [&](auto& stream) {
    boost::asio::async_write(
        stream, boost::asio::buffer(t.write_buf),
        [this, self = shared_from_this(), epoch = epoch_, keep = transport_](
            const boost::system::error_code& ec, size_t) { OnWrite(epoch, ec); });
  });
}

void RedisConnection::OnWrite(uint64_t epoch, const boost::system::error_code& ec) {
  if (epoch != epoch_) return;
  writing_ = false;
  transport_->write_buf.clear();  // Keeps its capacity for the next batch.
  if (ec) {
    FailConnection(TransportError(config_.host_port, "write", ec));
    return;
  }
  TryWrite();
}

void RedisConnection::StartRead() {
  Transport& t = *transport_;
  WithStream(t, [&](auto& stream) {
    stream.async_read_some(
        boost::asio::buffer(t.read_buf),
        [this, self = shared_from_this(), epoch = epoch_, keep = transport_](
            const boost::system::error_code& ec, size_t bytes) { OnRead(epoch, ec, bytes); });
  });
}

void RedisConnection::OnRead(uint64_t epoch, const boost::system::error_code& ec, size_t bytes) {
  if (epoch != epoch_) return;
  if (ec) {
    FailConnection(IsConnectionClosed(ec)
                       ? absl::UnavailableError(absl::StrCat("redis ", config_.host_port,
                                                             ": connection closed by the server"))
                       : TransportError(config_.host_port, "read", ec));
    return;
  }
  last_progress_ = Now();
  if (absl::Status fed = reader_->Feed({transport_->read_buf.data(), bytes}); !fed.ok()) {
    FailConnection(fed);
    return;
  }
  while (true) {
    absl::StatusOr<std::optional<RedisReply>> next = reader_->Next();
    if (!next.ok()) {
      FailConnection(next.status());
      return;
    }
    if (!next->has_value()) break;
    if (config_.on_message && IsPublishedMessage(**next)) {
      // Subscriber mode: a message published to a channel, not a reply to any command.
      Bump(replies_);
      config_.on_message(**next);
      continue;
    }
    if (inflight_.empty()) {
      FailConnection(absl::InternalError(
          absl::StrCat("redis ", config_.host_port, ": a reply arrived with no command waiting")));
      return;
    }
    Bump(replies_);
    last_reply_ = last_progress_;
    Request& front = inflight_.front();
    const bool pipeline = front.command.is_pipeline();
    if (pipeline) {
      // A pipeline: gather its replies; it completes (or, as a tombstone, is dropped) on the last.
      if (front.done) front.replies.push_back(**std::move(next));
      if (++front.replies_received < front.command.reply_count()) continue;
    }
    Request request = inflight_.pop_front();
    if (!request.done) {
      Bump(late_replies_);  // Its command timed out; consuming the reply keeps the FIFO aligned.
      continue;
    }
    if (pipeline) {
      std::move(request.done)(RedisReply::Array(std::move(request.replies)));
    } else {
      std::move(request.done)(**std::move(next));
    }
    // A handshake step may have failed the connection; its buffers and FIFO are gone.
    if (epoch != epoch_) return;
  }
  in_flight_.store(inflight_.size(), std::memory_order_relaxed);
  StartRead();
}

void RedisConnection::ArmDeadlineTimer(TimePoint at) {
  if (at >= deadline_timer_at_) return;
  deadline_timer_at_ = at;
  {
    MutexLock lock(&mu_);
    timer_at_ = at;
  }
  deadline_timer_.expires_at(at);
  deadline_timer_.async_wait(
      [this, self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec == boost::asio::error::operation_aborted || closing_) return;
        OnDeadlineTimer();
      });
}

// Expires what is due, checks for a stalled connection, and re-arms for the next deadline.
void RedisConnection::OnDeadlineTimer() {
  deadline_timer_at_ = TimePoint::max();
  const TimePoint now = Now();
  std::vector<Request> expired;
  TimePoint next = TimePoint::max();
  {
    MutexLock lock(&mu_);
    timer_at_ = TimePoint::max();
    if (submitted_earliest_ <= now) {
      size_t kept = 0;
      submitted_earliest_ = TimePoint::max();
      for (Request& r : submitted_) {
        if (r.deadline <= now) {
          expired.push_back(std::move(r));
        } else {
          submitted_earliest_ = std::min(submitted_earliest_, r.deadline);
          submitted_[kept++] = std::move(r);
        }
      }
      submitted_.resize(kept);
    }
    next = submitted_earliest_;
  }
  Bump(timeouts_, expired.size());
  FailAll(expired, [](const Request& r) {
    return CommandTimeoutError(r.command.name(), r.timeout, /*sent=*/false);
  });
  // Written commands stay in the FIFO as tombstones, so their late replies are matched and dropped.
  // Callbacks cannot touch inflight_ (Submit only queues and posts), so indexing stays valid.
  for (size_t i = 0; i < inflight_.size(); ++i) {
    Request& r = inflight_[i];
    if (!r.done) continue;
    if (r.deadline > now) {
      next = std::min(next, r.deadline);
      continue;
    }
    Bump(timeouts_);
    RedisReplyCallback done = std::move(r.done);
    r.done = nullptr;
    r.replies.clear();  // A pipeline's tombstone only counts the replies still to come.
    std::move(done)(CommandTimeoutError(r.command.name(), r.timeout));
  }
  if (established_ && !inflight_.empty()) {
    const TimePoint stall_at = last_progress_ + config_.stall_timeout;
    // Bytes that keep trickling in hold off the check above without ever completing a reply (a
    // huge or slowed reply). Once the oldest command's deadline has passed, its reply must
    // complete within stall_timeout of the last reply, or the connection is dropped rather than
    // kept reading for a caller that has gone.
    const TimePoint overdue_at =
        std::max(inflight_.front().deadline, last_reply_ + config_.stall_timeout);
    if (now >= stall_at) {
      FailConnection(absl::UnavailableError(absl::StrCat(
          "redis ", config_.host_port, ": no reply for ", config_.stall_timeout.count(),
          "ms with commands waiting; connection presumed dead")));
    } else if (now >= overdue_at) {
      FailConnection(absl::UnavailableError(absl::StrCat(
          "redis ", config_.host_port, ": reply to ", AbslView(inflight_.front().command.name()),
          " still incomplete ", config_.stall_timeout.count(),
          "ms after the last reply and past its deadline (",
          reader_ != nullptr ? reader_->pending_bytes() : 0,
          " bytes received so far); connection dropped")));
    } else {
      next = std::min({next, stall_at, overdue_at});
    }
  }
  ArmDeadlineTimer(next);
}

void RedisConnection::AddStats(RedisClientStats& stats) const {
  stats.commands_sent += commands_sent_.load(std::memory_order_relaxed);
  stats.writes += writes_.load(std::memory_order_relaxed);
  stats.replies += replies_.load(std::memory_order_relaxed);
  stats.timeouts += timeouts_.load(std::memory_order_relaxed);
  stats.late_replies += late_replies_.load(std::memory_order_relaxed);
  stats.rejected += rejected_.load(std::memory_order_relaxed);
  stats.lost += lost_.load(std::memory_order_relaxed);
  stats.connects += connects_.load(std::memory_order_relaxed);
  stats.connect_failures += connect_failures_.load(std::memory_order_relaxed);
  stats.disconnects += disconnects_.load(std::memory_order_relaxed);
  stats.in_flight += in_flight_.load(std::memory_order_relaxed);
  stats.connections += 1;
  stats.connections_ready += ready() ? 1 : 0;
  MutexLock lock(&mu_);
  stats.queued += submitted_.size();
}

}  // namespace sluice::internal
