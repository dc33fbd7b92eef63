// Buffers: reference-counted byte ranges over pooled memory or over Python-owned input.
//
// Decoded columns leave the native core as Arrow C data arrays whose buffers are these
// blocks; the Arrow release callback drops the references. Large blocks come from a
// caching pool: on the machines measured here a fresh page costs ~3.5 us to fault in, so a
// decoder that frees and re-allocates its outputs batch after batch would spend more time
// in the kernel than in its loops (see native-core.md). Freed blocks are kept (up to
// `cache_limit` bytes) and handed out again.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "vx.h"

namespace vx {

// A block of memory: pooled (owned, writable) or borrowed from Python (read-only input).
struct Mem {
  uint8_t* base = nullptr;
  size_t cap = 0;
  bool owned = false;  // pooled memory we may write to
  virtual ~Mem() = default;
};

// One contiguous range of a Mem. Cheap to copy (a shared_ptr and two words).
struct Buf {
  std::shared_ptr<Mem> mem;
  uint8_t* ptr = nullptr;
  size_t len = 0;

  Buf() = default;
  Buf(std::shared_ptr<Mem> m, uint8_t* p, size_t n) : mem(std::move(m)), ptr(p), len(n) {}

  bool empty() const { return len == 0; }
  const uint8_t* data() const { return ptr; }
  template <class T>
  const T* as() const { return reinterpret_cast<const T*>(ptr); }
  template <class T>
  T* mut() { return reinterpret_cast<T*>(ptr); }
  // a view of [off, off + n) (the caller checked the range)
  Buf slice(size_t off, size_t n) const { return Buf(mem, ptr + off, n); }
  // pooled memory nobody else holds: kernels may overwrite it in place
  bool unique_owned() const { return mem && mem->owned && mem.use_count() == 1; }
  Bytes bytes() const { return Bytes(ptr, len); }
};

// `n` bytes of pooled memory, 64-byte aligned, uninitialized.
Buf alloc(size_t n);
// `n` zeroed bytes.
Buf alloc_zeroed(size_t n);
// a copy of [p, p + n) in pooled memory
Buf copy_of(const uint8_t* p, size_t n);

// Pool statistics and settings (exposed to Python for tests and the benchmarks).
struct PoolStats {
  uint64_t allocated_bytes;  // live blocks handed out
  uint64_t cached_bytes;     // freed blocks kept for reuse
  uint64_t allocations;
  uint64_t reuses;
};
PoolStats pool_stats();
void set_cache_limit(uint64_t bytes);
uint64_t cache_limit();
void release_cache();  // free every cached block

}  // namespace vx
