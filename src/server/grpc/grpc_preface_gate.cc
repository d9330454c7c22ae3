#include "src/server/grpc/grpc_preface_gate.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <utility>

#include <boost/asio/steady_timer.hpp>

namespace sluice::server {

struct PrefaceGate::Held {
  Held(Socket s, boost::asio::io_context& context) : socket(std::move(s)), timer(context) {}
  Socket socket;
  boost::asio::steady_timer timer;
  std::optional<Position> position;  // Set while listed in held_.
};

PrefaceGate::PrefaceGate(boost::asio::io_context& context, std::chrono::milliseconds timeout,
                         Pass pass)
    : context_(context), timeout_(timeout), pass_(std::move(pass)) {}

PrefaceGate::~PrefaceGate() {
  // Unlists every connection, so that the handlers still queued do not touch this gate. A timer
  // or socket that cannot be cancelled (boost::system::system_error) leaves handlers that would.
  try {
    CloseAll();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grpc: closing the connections not handed over failed: %s\n", e.what());
    std::terminate();
  }
}

void PrefaceGate::Hold(Socket socket) {
  auto held = std::make_shared<Held>(std::move(socket), context_);
  held->position = held_.insert(held_.end(), held);
  // Each handler holds `held` and acts only while it is listed: the first to run unlists it, and
  // the other, cancelled, finds it unlisted.
  held->socket.async_wait(Socket::wait_read, [this, held](const boost::system::error_code& ec) {
    if (!held->position.has_value() || ec == boost::asio::error::operation_aborted) return;
    Release(held);
    pass_(std::move(held->socket));
  });
  held->timer.expires_after(timeout_);
  held->timer.async_wait([this, held](const boost::system::error_code& ec) {
    if (ec || !held->position.has_value()) return;
    timed_out_.fetch_add(1, std::memory_order_relaxed);
    Release(held);
    boost::system::error_code ignored;
    held->socket.close(ignored);
  });
}

bool PrefaceGate::CloseOldest() {
  if (held_.empty()) return false;
  const std::shared_ptr<Held> oldest = held_.front();
  Release(oldest);
  boost::system::error_code ignored;
  oldest->socket.close(ignored);
  return true;
}

void PrefaceGate::CloseAll() {
  while (CloseOldest()) {
  }
}

void PrefaceGate::Release(const std::shared_ptr<Held>& held) {
  held_.erase(*held->position);
  held->position.reset();
  held->timer.cancel();
  if (held->socket.is_open()) {
    boost::system::error_code ignored;
    held->socket.cancel(ignored);  // The wait for bytes, when the timer or the cap came first.
  }
}

}  // namespace sluice::server
