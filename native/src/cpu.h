// Runtime CPU dispatch: x86-64 AVX2 regions and the one check that picks them.
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
}  // namespace vx
#endif
