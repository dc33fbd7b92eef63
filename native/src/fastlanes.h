// The FastLanes 1024-value layouts (see encodings/_fastlanes_layout.py for the numpy
// reference and the layout itself).
//
// With T the unsigned type of W bits, LANES = 1024 / W and B the bit width, a chunk of 1024
// values is 1024 * B / W words. Lane l's bit stream is words l, l + LANES, ... and its row
// r holds bits [r * B, (r + 1) * B), the value at chunk position
// FL_ORDER[r / 8] * 16 + (r % 8) * 128 + l. Row r of every lane is LANES contiguous words of
// input and LANES contiguous values of output, so the kernels loop over rows (unrolled at
// compile time: B and r are template parameters, every shift an immediate) and, inside,
// over lanes (which the compiler vectorizes).
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

namespace vx::fl {

constexpr int FL_ORDER[8] = {0, 4, 2, 6, 1, 5, 3, 7};

template <class T>
constexpr int W = int(sizeof(T) * 8);
template <class T>
constexpr int LANES = 1024 / W<T>;

// Row R of every lane, value + ref (ref 0: plain unpack).
template <class T, int B, int R>
inline void unpack_row(const T* __restrict in, T* __restrict out, T ref) {
  constexpr int w = W<T>;
  constexpr int nl = LANES<T>;
  constexpr int start = R * B;
  constexpr int k = start / w;
  constexpr int s = start % w;
  constexpr bool spill = s + B > w;
  constexpr T mask = B == w ? T(~T(0)) : T((T(1) << (B % w)) - 1);
  constexpr int at = FL_ORDER[R / 8] * 16 + (R % 8) * 128;
  const T* a = in + nl * k;
  T* o = out + at;
  if constexpr (spill) {
    const T* b = in + nl * (k + 1);
    for (int l = 0; l < nl; l++) o[l] = T((T(a[l] >> s) | T(b[l] << (w - s))) & mask) + ref;
  } else {
    for (int l = 0; l < nl; l++) o[l] = T(T(a[l] >> s) & mask) + ref;
  }
}

template <class T, int B, int... R>
inline void unpack_rows(const T* in, T* out, T ref, std::integer_sequence<int, R...>) {
  (unpack_row<T, B, R>(in, out, ref), ...);
}

// One chunk: 1024 * B / W words -> 1024 values (+ ref, wrapping).
template <class T, int B>
void unpack_chunk(const T* in, T* out, T ref) {
  if constexpr (B == 0) {
    for (int i = 0; i < 1024; i++) out[i] = ref;
  } else {
    unpack_rows<T, B>(in, out, ref, std::make_integer_sequence<int, W<T>>{});
  }
}

template <class T>
using UnpackFn = void (*)(const T*, T*, T);

template <class T, int... B>
constexpr auto make_table(std::integer_sequence<int, B...>) {
  struct Table {
    UnpackFn<T> fn[sizeof...(B)];
  };
  return Table{{&unpack_chunk<T, B>...}};
}

// the unpacker of bit width b (0 <= b <= W)
template <class T>
UnpackFn<T> unpacker(int b) {
  static constexpr auto table = make_table<T>(std::make_integer_sequence<int, W<T> + 1>{});
  return table.fn[b];
}

// Chunk position j (0..1023) -> (row, lane).
template <class T>
inline void row_lane(unsigned j, unsigned* row, unsigned* lane) {
  constexpr unsigned nl = LANES<T>;
  unsigned g = j >> 7;
  unsigned rem = j & 127;
  unsigned block = rem / nl;
  *lane = rem % nl;
  unsigned o = block * (nl / 16);  // FL_ORDER[r / 8] == o
  *row = 8 * unsigned(FL_ORDER[o]) + g;
}

// The value at chunk position j of a chunk's words (random access).
template <class T>
inline T unpack_one(const T* chunk, int b, unsigned j) {
  if (b == 0) return 0;
  constexpr int w = W<T>;
  constexpr unsigned nl = LANES<T>;
  unsigned r, l;
  row_lane<T>(j, &r, &l);
  unsigned start = r * unsigned(b);
  unsigned k = start / w, s = start % w;
  T v = T(chunk[nl * k + l] >> s);
  if (s + unsigned(b) > unsigned(w)) v |= T(chunk[nl * (k + 1) + l] << (w - s));
  if (b < w) v &= T((T(1) << b) - 1);
  return v;
}

// The FastLanes transpose used by fastlanes.delta: transposed[i] = values[transpose(i)].
inline unsigned transpose_index(unsigned i) {
  unsigned lane = i % 16;
  unsigned order = unsigned(FL_ORDER[(i / 16) % 8]);
  unsigned row = i / 128;
  return lane * 64 + order * 8 + row;
}

}  // namespace vx::fl

// -- fastlanes.delta (appended) ---------------------------------------------------------------
// A delta chunk holds, for each lane l, W deltas in the bit-packing row order: row r of lane
// l is the delta at chunk position FL_ORDER[r / 8] * 16 + (r % 8) * 128 + l (bit-packed
// deltas: row r of the unpack). Decoding is a prefix sum down each lane's rows from the
// lane's base (wrapping), and the FastLanes untranspose puts row r of lane l at output
// position (l % 16) * 64 + FL_ORDER[l / 16] * 8 + r: each lane's W values end up contiguous.
//
// The kernels run the sums lane-parallel into a row-major scratch (rows[r * LANES + l]: row
// r of every lane is LANES contiguous values, so the loops over lanes vectorize; the
// bit-unpack of the deltas is fused in, rows unrolled at compile time as in unpack_chunk),
// then untranspose the scratch with 16-byte tile transposes (SSE2 unpacks: the scalar
// scatter measured 3-5x slower than the sums themselves).

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vx::fl {

// Row R of every lane: rows[R] = rows[R - 1] (base for R = 0) + unpacked delta + ref.
template <class T, int B, int R>
inline void undelta_row_packed(const T* __restrict in, const T* __restrict base, T* __restrict rows, T ref) {
  constexpr int w = W<T>;
  constexpr int nl = LANES<T>;
  constexpr int start = R * B;
  constexpr int k = start / w;
  constexpr int s = start % w;
  constexpr bool spill = s + B > w;
  constexpr T mask = B == w ? T(~T(0)) : T((T(1) << (B % w)) - 1);
  const T* a = in + nl * k;
  const T* prev = R == 0 ? base : rows + (R - 1) * nl;
  T* o = rows + R * nl;
  if constexpr (B == 0) {
    for (int l = 0; l < nl; l++) o[l] = T(prev[l] + ref);
  } else if constexpr (spill) {
    const T* b = in + nl * (k + 1);
    for (int l = 0; l < nl; l++) o[l] = T(prev[l] + T(T(T(a[l] >> s) | T(b[l] << (w - s))) & mask) + ref);
  } else {
    for (int l = 0; l < nl; l++) o[l] = T(prev[l] + T(T(a[l] >> s) & mask) + ref);
  }
}

template <class T, int B, int... R>
inline void undelta_rows_packed(const T* in, const T* base, T* rows, T ref, std::integer_sequence<int, R...>) {
  (undelta_row_packed<T, B, R>(in, base, rows, ref), ...);
}

// Row R of every lane from plain (decoded, chunk-order) deltas.
template <class T, int R>
inline void undelta_row_plain(const T* __restrict deltas, const T* __restrict base, T* __restrict rows) {
  constexpr int nl = LANES<T>;
  constexpr int at = FL_ORDER[R / 8] * 16 + (R % 8) * 128;
  const T* d = deltas + at;
  const T* prev = R == 0 ? base : rows + (R - 1) * nl;
  T* o = rows + R * nl;
  for (int l = 0; l < nl; l++) o[l] = T(prev[l] + d[l]);
}

template <class T, int... R>
inline void undelta_rows_plain(const T* deltas, const T* base, T* rows, std::integer_sequence<int, R...>) {
  (undelta_row_plain<T, R>(deltas, base, rows), ...);
}

#if defined(__SSE2__)
namespace detail {
template <int E>
inline __m128i ilo(__m128i a, __m128i b) {
  if constexpr (E == 1) return _mm_unpacklo_epi8(a, b);
  else if constexpr (E == 2) return _mm_unpacklo_epi16(a, b);
  else if constexpr (E == 4) return _mm_unpacklo_epi32(a, b);
  else return _mm_unpacklo_epi64(a, b);
}
template <int E>
inline __m128i ihi(__m128i a, __m128i b) {
  if constexpr (E == 1) return _mm_unpackhi_epi8(a, b);
  else if constexpr (E == 2) return _mm_unpackhi_epi16(a, b);
  else if constexpr (E == 4) return _mm_unpackhi_epi32(a, b);
  else return _mm_unpackhi_epi64(a, b);
}
// Transpose K vectors of K elements of E bytes (K * E = 16) by log2(K) interleave stages;
// afterwards x[i] holds column bitrev(i).
template <int K, int E>
inline void transpose_stage(__m128i* x) {
  __m128i y[K];
  for (int i = 0; i < K / 2; i++) {
    y[i] = ilo<E>(x[2 * i], x[2 * i + 1]);
    y[K / 2 + i] = ihi<E>(x[2 * i], x[2 * i + 1]);
  }
  for (int i = 0; i < K; i++) x[i] = y[i];
  if constexpr (E < 8) transpose_stage<K, E * 2>(x);
}
constexpr int bitrev(int i, int bits) {
  int r = 0;
  for (int b = 0; b < bits; b++)
    if (i & (1 << b)) r |= 1 << (bits - 1 - b);
  return r;
}
constexpr int log2i(int k) {
  int r = 0;
  while ((1 << r) < k) r++;
  return r;
}
}  // namespace detail
#endif

// rows (row-major, 16-byte aligned) -> the chunk's values in output order
template <class T>
inline void untranspose(const T* __restrict rows, T* __restrict out) {
  constexpr int w = W<T>;
  constexpr int nl = LANES<T>;
#if defined(__SSE2__)
  // Lanes l = 16 * g + m: for a group g, the W x 16 block of rows[r][16 g + m] goes to out
  // rows m (stride 64) at columns FL_ORDER[g] * 8 + r, as K x K tiles of 16-byte vectors.
  constexpr int K = 16 / int(sizeof(T));
  constexpr int L = detail::log2i(K);
  if constexpr (K > w) {  // u8 (K 16, W 8): groups g and g + 4 fill 16 consecutive columns
    for (int g = 0; g < 4; g++) {
      __m128i x[16];
      for (int i = 0; i < 16; i++)
        x[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(rows + (i & 7) * nl + (g + (i >> 3) * 4) * 16));
      detail::transpose_stage<16, 1>(x);
      for (int j = 0; j < 16; j++)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + detail::bitrev(j, L) * 64 + FL_ORDER[g] * 8), x[j]);
    }
  } else {
    for (int g = 0; g < nl / 16; g++)
      for (int r0 = 0; r0 < w; r0 += K)
        for (int m0 = 0; m0 < 16; m0 += K) {
          __m128i x[K];
          for (int i = 0; i < K; i++)
            x[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(rows + (r0 + i) * nl + g * 16 + m0));
          detail::transpose_stage<K, int(sizeof(T))>(x);
          for (int j = 0; j < K; j++)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (m0 + detail::bitrev(j, L)) * 64 + FL_ORDER[g] * 8 + r0),
                             x[j]);
        }
  }
#else
  for (int l = 0; l < nl; l++) {
    T* d = out + (l % 16) * 64 + FL_ORDER[l / 16] * 8;
    for (int r = 0; r < w; r++) d[r] = rows[r * nl + l];
  }
#endif
}

// One chunk of bit-packed deltas (1024 * B / W words; + ref each: a FoR over them) and its
// LANES bases -> 1024 values.
template <class T, int B>
void undelta_packed_chunk(const T* in, const T* base, T* out, T ref) {
  alignas(64) T rows[1024];
  undelta_rows_packed<T, B>(in, base, rows, ref, std::make_integer_sequence<int, W<T>>{});
  untranspose<T>(rows, out);
}

// One chunk of plain deltas (1024, chunk order) and its LANES bases -> 1024 values.
template <class T>
void undelta_chunk(const T* deltas, const T* base, T* out) {
  alignas(64) T rows[1024];
  undelta_rows_plain<T>(deltas, base, rows, std::make_integer_sequence<int, W<T>>{});
  untranspose<T>(rows, out);
}

template <class T>
using UndeltaFn = void (*)(const T*, const T*, T*, T);

template <class T, int... B>
constexpr auto make_undelta_table(std::integer_sequence<int, B...>) {
  struct Table {
    UndeltaFn<T> fn[sizeof...(B)];
  };
  return Table{{&undelta_packed_chunk<T, B>...}};
}

// the fused unpack + undelta of bit width b (0 <= b <= W)
template <class T>
UndeltaFn<T> undelta_packer(int b) {
  static constexpr auto table = make_undelta_table<T>(std::make_integer_sequence<int, W<T> + 1>{});
  return table.fn[b];
}

}  // namespace vx::fl
