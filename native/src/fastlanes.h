// The FastLanes 1024-value layouts (see encodings/fastlanes_layout.py for the numpy
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
