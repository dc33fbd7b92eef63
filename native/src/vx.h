// vortex_io native core: common definitions.
//
// Everything here runs on untrusted input. The rules (see ARCHITECTURE.md, "Native core"):
// every read is checked against the size of the buffer it reads, every length read off the
// wire is bounded before anything is allocated, and every failure is a vx::Error carrying
// the kind of the Python exception it becomes (MalformedStreamError, ...). Nothing here
// touches Python objects except module.cpp and the PyMem owner in memory.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace vx {

using i128 = __int128;
using u128 = unsigned __int128;

// The Python exception class an error becomes (vortex_io._errors).
enum class ErrKind : int {
  Malformed = 1,    // MalformedStreamError
  Truncated = 2,    // TruncatedStreamError
  Unsupported = 3,  // UnsupportedError
  Limit = 4,        // LimitExceededError
};

struct Error : std::exception {
  ErrKind kind;
  std::string msg;
  bool pathed = false;  // the innermost node already prefixed its path
  Error(ErrKind k, std::string m) : kind(k), msg(std::move(m)) {}
  const char* what() const noexcept override { return msg.c_str(); }
};

// -- string building for error messages ---------------------------------------------------
inline void cat_one(std::string& s, const std::string& v) { s += v; }
inline void cat_one(std::string& s, std::string_view v) { s.append(v.data(), v.size()); }
inline void cat_one(std::string& s, const char* v) { s += v; }
inline void cat_one(std::string& s, char v) { s += v; }
inline void cat_one(std::string& s, bool v) { s += v ? "True" : "False"; }
inline void cat_one(std::string& s, i128 v) {
  if (v < 0) {
    s += '-';
    u128 u = u128(0) - u128(v);
    std::string d;
    while (u) { d += char('0' + int(u % 10)); u /= 10; }
    s.append(d.rbegin(), d.rend());
    return;
  }
  if (v == 0) { s += '0'; return; }
  std::string d;
  u128 u = u128(v);
  while (u) { d += char('0' + int(u % 10)); u /= 10; }
  s.append(d.rbegin(), d.rend());
}
template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                        !std::is_same_v<T, char>, int> = 0>
inline void cat_one(std::string& s, T v) { s += std::to_string(v); }
inline void cat_one(std::string& s, double v) { s += std::to_string(v); }

template <class... A>
std::string cat(A&&... a) {
  std::string s;
  (cat_one(s, std::forward<A>(a)), ...);
  return s;
}

template <class... A>
[[noreturn]] void fail(ErrKind k, A&&... a) {
  throw Error(k, cat(std::forward<A>(a)...));
}
template <class... A>
[[noreturn]] void malformed(A&&... a) {
  throw Error(ErrKind::Malformed, cat(std::forward<A>(a)...));
}
template <class... A>
[[noreturn]] void unsupported(A&&... a) {
  throw Error(ErrKind::Unsupported, cat(std::forward<A>(a)...));
}
template <class... A>
[[noreturn]] void limit_exceeded(A&&... a) {
  throw Error(ErrKind::Limit, cat(std::forward<A>(a)...));
}

// A read-only byte range (never owns).
struct Bytes {
  const uint8_t* p = nullptr;
  size_t n = 0;
  Bytes() = default;
  Bytes(const uint8_t* p_, size_t n_) : p(p_), n(n_) {}
  std::string_view sv() const { return {reinterpret_cast<const char*>(p), n}; }
  Bytes sub(size_t off, size_t len) const { return {p + off, len}; }
};

// Little-endian loads of possibly unaligned data (the caller has checked the bounds).
template <class T>
inline T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Overflow-checked size arithmetic: lengths off the wire are untrusted.
inline bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
inline bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}
// a * b, saturating at UINT64_MAX (for limit checks: a saturated product exceeds any limit)
inline uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

}  // namespace vx
