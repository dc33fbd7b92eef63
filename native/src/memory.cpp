#include "memory.h"

#include <cstdlib>
#include <mutex>
#include <new>

namespace vx {
namespace {

// 64-byte aligned blocks (MSVC's runtime has no aligned_alloc)
void* aligned_block(size_t n) {
#ifdef _WIN32
  return _aligned_malloc(n, 64);
#else
  return std::aligned_alloc(64, n);
#endif
}
void free_block(void* p) {
#ifdef _WIN32
  _aligned_free(p);
#else
  std::free(p);
#endif
}

// Blocks of at least this size are pooled; smaller ones go straight to malloc (glibc keeps
// small freed blocks itself).
constexpr size_t kPoolMin = size_t(1) << 16;
constexpr size_t kAlign = 64;

// Size classes: four steps per power of two (x1, x1.25, x1.5, x1.75), so a block wastes
// at most 25%.
inline int size_class(size_t n, size_t* rounded) {
  int p = 63 - __builtin_clzll(uint64_t(n));  // 2^p <= n < 2^(p+1)
  size_t base = size_t(1) << p;
  size_t step = base >> 2;
  size_t k = (n - base + step - 1) / step;  // 0..4
  if (k == 4) {
    p += 1;
    base <<= 1;
    k = 0;
    step = base >> 2;
  }
  *rounded = base + k * step;
  return p * 4 + int(k);
}

struct Pool {
  std::mutex mu;
  std::vector<std::vector<void*>> free_lists = std::vector<std::vector<void*>>(64 * 4);
  uint64_t cached = 0;
  uint64_t live = 0;
  uint64_t allocations = 0;
  uint64_t reuses = 0;
  uint64_t limit = uint64_t(512) << 20;

  void* get(size_t n, size_t* cap) {
    size_t rounded;
    int c = size_class(n, &rounded);
    *cap = rounded;
    {
      std::lock_guard<std::mutex> g(mu);
      allocations++;
      live += rounded;
      auto& fl = free_lists[size_t(c)];
      if (!fl.empty()) {
        void* p = fl.back();
        fl.pop_back();
        cached -= rounded;
        reuses++;
        return p;
      }
    }
    void* p = aligned_block(rounded);
    if (!p) {
      std::lock_guard<std::mutex> g(mu);
      live -= rounded;
      throw std::bad_alloc();
    }
    return p;
  }

  void put(void* p, size_t cap) {
    size_t rounded;
    int c = size_class(cap, &rounded);
    {
      std::lock_guard<std::mutex> g(mu);
      live -= cap;
      if (cached + cap <= limit) {
        free_lists[size_t(c)].push_back(p);
        cached += cap;
        return;
      }
    }
    free_block(p);
  }

  void clear() {
    std::vector<void*> all;
    {
      std::lock_guard<std::mutex> g(mu);
      for (auto& fl : free_lists) {
        all.insert(all.end(), fl.begin(), fl.end());
        fl.clear();
      }
      cached = 0;
    }
    for (void* p : all) free_block(p);
  }
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: blocks may be released at exit
  return *p;
}

struct PoolMem final : Mem {
  ~PoolMem() override {
    if (!base) return;
#ifdef VX_EXACT_ALLOC
    std::free(base);
    return;
#endif
    if (cap >= kPoolMin) {
      pool().put(base, cap);
    } else {
      free_block(base);
    }
  }
};

}  // namespace

Buf alloc(size_t n) {
  auto m = std::make_shared<PoolMem>();
  m->owned = true;
  if (n == 0) {
    return Buf(std::move(m), nullptr, 0);
  }
#ifdef VX_EXACT_ALLOC
  // sanitizer builds (VX_SANITIZE, the fuzz harnesses): every block is its own allocation
  // of exactly n bytes, never rounded up nor pooled, so AddressSanitizer reports a read or
  // write past a buffer's end and a use after its release
  void* q = nullptr;
  if (posix_memalign(&q, kAlign, n) != 0) throw std::bad_alloc();
  m->base = static_cast<uint8_t*>(q);
  m->cap = n;
  return Buf(std::move(m), static_cast<uint8_t*>(q), n);
#endif
  if (n >= kPoolMin) {
    size_t cap;
    m->base = static_cast<uint8_t*>(pool().get(n, &cap));
    m->cap = cap;
  } else {
    size_t r = (n + kAlign - 1) / kAlign * kAlign;
    m->base = static_cast<uint8_t*>(aligned_block(r));
    if (!m->base) throw std::bad_alloc();
    m->cap = r;
  }
  uint8_t* p = m->base;
  return Buf(std::move(m), p, n);
}

Buf alloc_zeroed(size_t n) {
  Buf b = alloc(n);
  if (n) std::memset(b.ptr, 0, n);
  return b;
}

Buf copy_of(const uint8_t* p, size_t n) {
  Buf b = alloc(n);
  if (n) std::memcpy(b.ptr, p, n);
  return b;
}

PoolStats pool_stats() {
  Pool& p = pool();
  std::lock_guard<std::mutex> g(p.mu);
  return PoolStats{p.live, p.cached, p.allocations, p.reuses};
}

void set_cache_limit(uint64_t bytes) {
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> g(p.mu);
    p.limit = bytes;
  }
  if (bytes == 0) release_cache();
}

uint64_t cache_limit() {
  Pool& p = pool();
  std::lock_guard<std::mutex> g(p.mu);
  return p.limit;
}

void release_cache() { pool().clear(); }

}  // namespace vx
