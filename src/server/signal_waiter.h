// SignalWaiter: SIGINT, SIGTERM and SIGHUP, taken synchronously by the thread that waits for them
// (sluiced's main thread) rather than by a handler: blocked at construction, so that no thread
// started later takes them, and read with Wait().
//
// Example:
//   SignalWaiter signals;  // before any thread starts
//   ...
//   if (const int sig = signals.Wait(std::chrono::seconds(1)); sig == SIGTERM) Drain();
//
// Thread safety: construct before any thread starts; Wait() from one thread.
#ifndef SLUICE_SERVER_SIGNAL_WAITER_H_
#define SLUICE_SERVER_SIGNAL_WAITER_H_

#include <chrono>
#include <csignal>

namespace sluice::server {

class SignalWaiter {
 public:
  // Blocks the three signals in the calling thread, and so in every thread it starts afterwards.
  SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;
  ~SignalWaiter() = default;

  // Waits up to `timeout` for one of the three; returns it, or 0 when none came.
  int Wait(std::chrono::milliseconds timeout);

 private:
  sigset_t signals_{};
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_SIGNAL_WAITER_H_
