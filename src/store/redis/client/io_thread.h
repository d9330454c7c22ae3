// IoThread: one io_context and the thread that runs it, shared by the connections of a router
// (internal).
//
// A router (ClusterClient, SentinelClient) makes one IoThread and hands it to every RedisClient it
// creates, so that the connections to all of its servers are sockets on one thread: one epoll
// wake-up serves the replies of every server, and no reply crosses between I/O threads. A
// RedisClient made on its own gets an IoThread of its own.
//
// Lifetime: two kinds of references. The handle (shared_ptr<IoThread>) keeps the thread running:
// the router and each RedisClient on the thread hold one, in the objects their users own, and
// the thread runs until the last of them lets go. Its destructor then lets the io_context run out
// of work (the handlers of operations already cancelled still run) and joins the thread, or, when
// the last handle goes on the thread itself (from a callback), detaches it and the thread finishes
// on its own. context() keeps only the io_context alive: objects that own Asio timers or sockets
// and may be kept by a handler (a connection, a router's state) hold that, never a handle, so the
// last handle is let go of on the user's thread and the join happens there.
//
// Example:
//   std::shared_ptr<internal::IoThread> io = internal::IoThread::Start("sluice-cluster");
//   auto a = RedisClient::Create(options_a, io);  // Each holds `io`.
//   auto b = RedisClient::Create(options_b, io);  // a's and b's callbacks run on one thread.
//
// Thread safety: thread-safe; context() may be used from any thread as Asio allows (post, timers
// and sockets created on it), OnThisThread() tells whether the caller is the thread.
#ifndef SLUICE_STORE_REDIS_CLIENT_IO_THREAD_H_
#define SLUICE_STORE_REDIS_CLIENT_IO_THREAD_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace sluice::internal {

class IoThread {
 public:
  // IoThread::Start()
  //
  // Starts a thread named `name` (at most 15 characters are kept) running a new io_context, kept
  // running while the returned handle (or a copy) lives. Throws std::system_error only when no
  // thread can be started.
  static std::shared_ptr<IoThread> Start(const std::string& name);

  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;
  // Lets the io_context run out of work, then joins the thread (detaches it on the thread itself).
  ~IoThread();

  // The io_context, kept alive (not running) by the returned pointer.
  std::shared_ptr<boost::asio::io_context> context() const { return {state_, &state_->io}; }
  // True when called on this thread (from one of its handlers or callbacks).
  bool OnThisThread() const { return RunsOn(state_->io); }
  // True when called on the IoThread running `io`.
  static bool RunsOn(const boost::asio::io_context& io);
  std::thread::id thread_id() const { return thread_id_; }

  // IoThread::RunningForTest()
  //
  // Returns how many IoThreads of the process are running now (started and not yet finished), so
  // tests can count the threads a router starts.
  static int RunningForTest();

 private:
  // What the thread and the handle share: the thread keeps it until run() returns.
  struct State {
    boost::asio::io_context io{1};
  };
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

  explicit IoThread(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::optional<WorkGuard> guard_;
  std::thread thread_;
  std::thread::id thread_id_;
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_REDIS_CLIENT_IO_THREAD_H_
