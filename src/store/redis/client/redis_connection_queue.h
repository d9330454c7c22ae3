// The building blocks of a connection's queues (internal).
//
// RequestRing: the FIFO of commands awaiting replies on one connection. A growable ring buffer;
// unlike std::deque it allocates nothing in steady state, as slots are reused when commands are
// written and answered, which matters at hundreds of thousands of commands per second.
// Thread safety: not thread-safe; owned by one connection's I/O thread.
#ifndef SLUICE_STORE_REDIS_CLIENT_REDIS_CONNECTION_QUEUE_H_
#define SLUICE_STORE_REDIS_CLIENT_REDIS_CONNECTION_QUEUE_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace sluice::internal {

template <typename T>
class RequestRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  // REQUIRES: i < size(). Element 0 is the oldest.
  T& operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }

  T& front() { return (*this)[0]; }

  void push_back(T value) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(value);
    ++size_;
  }

  // Removes and returns the oldest element. REQUIRES: !empty().
  T pop_front() {
    T out = std::move(slots_[head_]);
    slots_[head_] = T();  // Release what the moved-from slot may still hold.
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
    return out;
  }

  // Moves all elements out, oldest first, leaving the ring empty (its capacity is kept).
  std::vector<T> TakeAll() {
    std::vector<T> out;
    out.reserve(size_);
    while (!empty()) out.push_back(pop_front());
    return out;
  }

 private:
  void Grow() {
    std::vector<T> bigger(slots_.empty() ? 64 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;  // Size is zero or a power of two.
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace sluice::internal

#endif  // SLUICE_STORE_REDIS_CLIENT_REDIS_CONNECTION_QUEUE_H_
