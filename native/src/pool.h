// A fixed pool of worker threads for data-parallel loops (messages, columns, chunks).
//
// `parallel_for(n, threads, fn)` runs fn(0..n-1) on up to `threads` threads (the caller
// included) and returns when all are done. Tasks never touch Python. Nested calls from a
// worker run inline, so kernels may use parallel_for freely. Results are written by index,
// so the output never depends on scheduling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace vx {

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn);

// Interrupting a loop (Ctrl-C). While an InterruptScope is alive on a thread, that thread's
// outermost parallel_for calls `poll` about every kPollInterval, between tasks and while it
// waits for the workers' tasks. When poll returns true the tasks not yet started are skipped
// and, once the started ones are done, parallel_for throws Interrupted. poll runs on the
// calling thread only; tasks never see it (they stay free of Python).
struct Interrupted {};
constexpr int kPollIntervalMs = 20;
class InterruptScope {
 public:
  explicit InterruptScope(std::function<bool()> poll);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  std::function<bool()> poll_;
  const std::function<bool()>* prev_;
};
// `threads`, or 1 when the loop's work (values to decode: rows x columns) is too small to
// pay for waking the workers (tens of microseconds; a tiny message decodes in less)
constexpr uint64_t kParallelMinWork = 32768;
inline int threads_for(uint64_t work, int threads) { return work < kParallelMinWork ? 1 : threads; }
// Run fn on the one background thread (started on first use), after the tasks queued
// before it: work the caller overlaps with its own (the checksums of message bodies while
// Python frames the next messages). fn must not throw and never touches Python.
void run_in_background(std::function<void()> fn);
// the number of hardware threads (at least 1)
int hardware_threads();

}  // namespace vx
