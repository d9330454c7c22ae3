#include "src/server/signal_waiter.h"

#include <ctime>

#include <pthread.h>

namespace sluice::server {

SignalWaiter::SignalWaiter() {
  sigemptyset(&signals_);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals_, s);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int SignalWaiter::Wait(std::chrono::milliseconds timeout) {
  const auto ms = timeout.count();
  const timespec slice{.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1'000'000L};
  const int sig = sigtimedwait(&signals_, nullptr, &slice);
  return sig > 0 ? sig : 0;
}

}  // namespace sluice::server
