#include "pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#ifndef _WIN32
#include <pthread.h>
#endif

namespace vx {
namespace {

thread_local bool tl_in_worker = false;
// this thread's InterruptScope poll (or null), and how many parallel_for calls are active on
// it (only the outermost polls: a nested loop runs inside a task)
thread_local const std::function<bool()>* tl_poll = nullptr;
thread_local int tl_depth = 0;

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(kPollIntervalMs);

// calls poll when kPollInterval has passed since the last call
struct Poller {
  const std::function<bool()>* poll;
  Clock::time_point next;
  explicit Poller(const std::function<bool()>* p) : poll(p), next(Clock::now() + kPollInterval) {}
  bool interrupted() {
    if (!poll) return false;
    auto now = Clock::now();
    if (now < next) return false;
    bool r = (*poll)();
    next = Clock::now() + kPollInterval;
    return r;
  }
};

struct Job {
  const std::function<void(size_t)>* fn = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  int slots = 0;  // workers allowed to join
};

// A forked child has only the thread that forked: the pool's workers and the background
// thread are gone, and a lock one of them held stays held. The child forgets both (they are
// leaked, never touched again) and starts its own on first use (pthread_atfork, registered
// by the first of them to start).
void forget_after_fork();
void watch_forks() {
#ifndef _WIN32
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, forget_after_fork); });
#endif
}

class Pool;
class Background;
Pool* g_pool = nullptr;
Background* g_background = nullptr;
std::mutex* g_make_mu = new std::mutex();  // (a new one in a child: see forget_after_fork)

class Pool {
 public:
  static Pool& get() {
    watch_forks();
    std::lock_guard<std::mutex> g(*g_make_mu);
    if (!g_pool) g_pool = new Pool();  // never destroyed (workers may outlive static destruction)
    return *g_pool;
  }

  // (throws Interrupted, once no task runs any more, when poll asked to stop)
  void run(size_t n, int threads, const std::function<void(size_t)>& fn, Poller& poller) {
    auto job = std::make_shared<Job>();
    job->fn = &fn;
    job->n = n;
    job->slots = threads - 1;
    ensure_workers(threads - 1);
    {
      std::lock_guard<std::mutex> g(mu_);
      jobs_.push_back(job);
    }
    cv_.notify_all();
    bool interrupted = work(*job, &poller);  // the caller takes tasks too
    {
      std::unique_lock<std::mutex> g(mu_);
      auto finished = [&] { return job->done.load() == job->n; };
      if (!poller.poll) {
        done_cv_.wait(g, finished);
      } else {
        // in slices, polling between them (without the lock: poll takes the GIL)
        while (!finished()) {
          if (done_cv_.wait_for(g, kPollInterval, finished)) break;
          if (interrupted) continue;
          g.unlock();
          if (poller.interrupted()) {
            interrupted = true;
            cancel(*job);
          }
          g.lock();
        }
      }
      for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
        if (it->get() == job.get()) {
          jobs_.erase(it);
          break;
        }
    }
    if (interrupted) throw Interrupted();
  }

 private:
  // the tasks not yet taken are counted as done, never run
  void cancel(Job& j) {
    size_t first = j.next.exchange(j.n);
    if (first < j.n) finish(j, j.n - first);
  }

  void finish(Job& j, size_t k) {
    if (j.done.fetch_add(k) + k == j.n) {
      std::lock_guard<std::mutex> g(mu_);
      done_cv_.notify_all();
    }
  }

  // true when the poller (the caller's) asked to stop
  bool work(Job& j, Poller* poller = nullptr) {
    while (true) {
      if (poller && poller->interrupted()) {
        cancel(j);
        return true;
      }
      size_t i = j.next.fetch_add(1);
      if (i >= j.n) return false;
      (*j.fn)(i);
      finish(j, 1);
    }
  }

  void ensure_workers(int k) {
    std::lock_guard<std::mutex> g(mu_);
    while (int(workers_.size()) < k) {
      workers_.emplace_back([this] { loop(); });
      workers_.back().detach();
    }
  }

  void loop() {
    tl_in_worker = true;
    while (true) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] {
          for (auto& j : jobs_)
            if (j->slots > 0 && j->next.load() < j->n) return true;
          return false;
        });
        for (auto& j : jobs_)
          if (j->slots > 0 && j->next.load() < j->n) {
            job = j;
            j->slots--;
            break;
          }
      }
      if (job) work(*job);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::vector<std::shared_ptr<Job>> jobs_;
  std::vector<std::thread> workers_;
};

// One thread running queued tasks in order (run_in_background).
class Background {
 public:
  static Background& get() {
    watch_forks();
    std::lock_guard<std::mutex> g(*g_make_mu);
    if (!g_background) g_background = new Background();  // never destroyed, as the pool
    return *g_background;
  }
  void submit(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!started_) {
        std::thread([this] { loop(); }).detach();
        started_ = true;
      }
      q_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    // (not a pool worker: a parallel_for in a task uses the pool, as the main thread's do)
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return !q_.empty(); });
        fn = std::move(q_.front());
        q_.pop_front();
      }
      fn();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool started_ = false;
};

void forget_after_fork() {
  g_pool = nullptr;
  g_background = nullptr;
  g_make_mu = new std::mutex();  // (a thread of the parent may have held the old one)
}

}  // namespace

void run_in_background(std::function<void()> fn) { Background::get().submit(std::move(fn)); }

int hardware_threads() {
  unsigned h = std::thread::hardware_concurrency();
  return h ? int(h) : 1;
}

InterruptScope::InterruptScope(std::function<bool()> poll) : poll_(std::move(poll)), prev_(tl_poll) {
  tl_poll = &poll_;
}
InterruptScope::~InterruptScope() { tl_poll = prev_; }

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (threads > int(n)) threads = int(n);
  Poller poller(tl_depth == 0 && !tl_in_worker ? tl_poll : nullptr);
  struct Depth {
    Depth() { tl_depth++; }
    ~Depth() { tl_depth--; }
  } depth;
  if (threads <= 1 || tl_in_worker) {
    for (size_t i = 0; i < n; i++) {
      if (poller.interrupted()) throw Interrupted();
      fn(i);
    }
    return;
  }
  Pool::get().run(n, threads, fn, poller);
}

}  // namespace vx
