#include "src/store/redis/client/io_thread.h"

#include <utility>

#include "spdlog/spdlog.h"
#include <pthread.h>

namespace sluice::internal {
namespace {

// The io_context of the IoThread whose thread this is, if any.
thread_local const boost::asio::io_context* current_io = nullptr;

std::atomic<int> running_threads{0};

}  // namespace

std::shared_ptr<IoThread> IoThread::Start(const std::string& name) {
  // The I/O threads log (connections lost, failovers). spdlog's registry is a function-local
  // static inside the shared libspdlog, whose guard ThreadSanitizer cannot see: made here, on the
  // starting thread, before any I/O thread can log, two of them never race to make it.
  (void)spdlog::default_logger_raw();
  auto state = std::make_shared<State>();
  std::shared_ptr<IoThread> io(new IoThread(state));
  // The thread holds the State, so that when the last handle goes on this very thread (and the
  // thread is detached) the io_context outlives the handler that was running.
  io->thread_ = std::thread([state = std::move(state), name = name.substr(0, 15)] {
    running_threads.fetch_add(1, std::memory_order_relaxed);
    current_io = &state->io;
    pthread_setname_np(pthread_self(), name.c_str());
    state->io.run();
    current_io = nullptr;
    running_threads.fetch_sub(1, std::memory_order_relaxed);
  });
  io->thread_id_ = io->thread_.get_id();
  return io;
}

IoThread::IoThread(std::shared_ptr<State> state)
    : state_(std::move(state)), guard_(state_->io.get_executor()) {}

IoThread::~IoThread() {
  // run() returns once nothing is left to do: every user has shut its sockets and timers down,
  // and their cancelled handlers run before it returns.
  guard_.reset();
  if (!thread_.joinable()) return;
  if (OnThisThread()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

bool IoThread::RunsOn(const boost::asio::io_context& io) { return current_io == &io; }

int IoThread::RunningForTest() { return running_threads.load(std::memory_order_relaxed); }

}  // namespace sluice::internal
