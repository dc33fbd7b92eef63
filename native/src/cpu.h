// Runtime CPU dispatch: x86-64 AVX2 (and SSE4.2 CRC-32C) regions and the checks that pick
// them.
//
//   VX_AVX2_BEGIN
//   void kernel_avx2(...) { ... _mm256_... }   // compiled for AVX2
//   VX_AVX2_END
//   if (have_avx2()) kernel_avx2(...); else kernel_base(...);
//
// The region pragmas are GCC's `target` options or clang's `attribute push` (clang ignores
// the GCC form; Apple's and Debian's clang both take the clang one). VX_HAVE_AVX2_DISPATCH
// is defined where both exist (x86-64 with GCC or clang); elsewhere the baseline loops run.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <cstdlib>

#include <immintrin.h>

#define VX_HAVE_AVX2_DISPATCH 1
#if defined(__clang__)
#define VX_AVX2_BEGIN \
  _Pragma("clang attribute push (__attribute__((target(\"avx2\"))), apply_to = function)")
#define VX_AVX2_END _Pragma("clang attribute pop")
#else
#define VX_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2\")")
#define VX_AVX2_END _Pragma("GCC pop_options")
#endif
// the same for SSE4.2 (the crc32 instruction, crc32c.cpp): part of the x86-64-v2 baseline the
// extension is normally built for, but a build without -march=x86-64-v2 still gets it
#if defined(__clang__)
#define VX_SSE42_BEGIN \
  _Pragma("clang attribute push (__attribute__((target(\"sse4.2\"))), apply_to = function)")
#define VX_SSE42_END _Pragma("clang attribute pop")
#else
#define VX_SSE42_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"sse4.2\")")
#define VX_SSE42_END _Pragma("GCC pop_options")
#endif

namespace vx {
// True where the CPU runs AVX2 (VORTEX_IO_NATIVE_BASELINE=1 keeps the baseline loops, so
// their tests run on AVX2 machines too)
inline bool have_avx2() {
  static const bool v = [] {
    const char* e = std::getenv("VORTEX_IO_NATIVE_BASELINE");
    if (e && *e && *e != '0') return false;
    __builtin_cpu_init();
    return bool(__builtin_cpu_supports("avx2"));
  }();
  return v;
}
// True where the CPU has SSE4.2's crc32 instruction (VORTEX_IO_NATIVE_BASELINE=1: the
// portable table CRC, as for have_avx2)
inline bool have_sse42() {
  static const bool v = [] {
    const char* e = std::getenv("VORTEX_IO_NATIVE_BASELINE");
    if (e && *e && *e != '0') return false;
    __builtin_cpu_init();
    return bool(__builtin_cpu_supports("sse4.2"));
  }();
  return v;
}
}  // namespace vx
#endif
