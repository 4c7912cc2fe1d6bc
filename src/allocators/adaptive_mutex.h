// SPDX-License-Identifier: Apache-2.0
// A mutex that spins before it sleeps (internal), for the allocators' one
// lock each. Their critical sections take 50-300 ns; a std::mutex puts a
// contending thread to sleep on a futex and the wake-up costs microseconds,
// so two threads sharing one allocator ran 8-15x slower per call than one
// thread alone. Spinning lets the waiter take the lock as soon as it is
// released; sleeping after the spin keeps an oversubscribed machine (more
// threads than cores, or a holder descheduled) from burning the cores the
// holder needs.
//
// States as in Drepper's "Futexes Are Tricky" (mutex 2): 0 unlocked, 1
// locked, 2 locked and someone may sleep; only an unlock that sees 2 pays
// for a wake-up. std::atomic::wait/notify are the futex on Linux.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tensormem::internal {

class AdaptiveMutex {
 public:
  // Looks at the lock before sleeping: a pause between two (20 ns on this
  // host's AMD EPYC, about twice that on recent Intel cores) and a yield
  // every 100th, so about 20 µs when the machine has cores to spare. A
  // holder that frees and allocates again re-takes the lock within
  // nanoseconds of releasing it, so a waiter needs many looks to catch it
  // free: 1,000 beat 100 and 300. The yields let a descheduled holder run
  // when threads outnumber cores (figures in docs/design/allocators.md).
  static constexpr int kSpins = 1000;
  static constexpr int kYieldEvery = 100;

  AdaptiveMutex() = default;
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() noexcept {
    std::uint32_t unlocked = 0;
    if (state_.compare_exchange_strong(unlocked, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    LockContended();
  }
  bool try_lock() noexcept {
    std::uint32_t unlocked = 0;
    return state_.compare_exchange_strong(unlocked, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  static void Pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#else
    std::this_thread::yield();
#endif
  }

  void LockContended() noexcept {
    // Spin only while the holder runs alone: once someone sleeps (state 2),
    // queue behind it rather than overtake it at every release.
    for (int i = 0; i < kSpins; ++i) {
      if (i % kYieldEvery == kYieldEvery - 1)
        std::this_thread::yield();
      else
        Pause();
      std::uint32_t s = state_.load(std::memory_order_relaxed);
      if (s == 2) break;
      if (s == 0 && state_.compare_exchange_weak(s, 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
    }
    // Taken as 2, so that our own unlock wakes whoever slept meanwhile.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }

  std::atomic<std::uint32_t> state_{0};
};

}  // namespace tensormem::internal
