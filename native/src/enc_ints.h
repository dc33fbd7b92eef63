// Helpers shared by the integer-layout encodings of enc_zigzag / enc_sequence / enc_runend /
// enc_sparse / enc_rle / enc_delta.cpp: bit ranges, run expansion of columns and masks, and
// the overlay of patch rows on a filled column (vortex.sparse).
#pragma once

#include <algorithm>

#include "enc_util.h"

namespace vx {
namespace ints {

// A decoded primitive column whose values are aligned to their width (a buffer the writer
// declared with a lower alignment than its type's is not copied by the reader): the kernels
// read them as T*.
inline void align_values(Col& c) {
  if (c.layout != Layout::Prim) return;
  if (reinterpret_cast<uintptr_t>(c.values.data()) % uintptr_t(ptype_width(c.ptype)))
    c.values = copy_of(c.values.data(), c.values.len);
}

// bits [a, b) of `bits` set to v (bits outside untouched)
inline void fill_bits_range(uint8_t* bits, uint64_t a, uint64_t b, bool v) {
  if (a >= b) return;
  while (a < b && (a & 7)) {
    if (v) set_bit(bits, a);
    else clear_bit(bits, a);
    a++;
  }
  uint64_t full = (b - a) >> 3;
  if (full) {
    std::memset(bits + (a >> 3), v ? 0xFF : 0x00, size_t(full));
    a += full << 3;
  }
  while (a < b) {
    if (v) set_bit(bits, a);
    else clear_bit(bits, a);
    a++;
  }
}

// A mask of n rows: rows [a, b) `inside`, the others `!inside`; all valid.
inline Mask range_mask(uint64_t n, uint64_t a, uint64_t b, bool inside) {
  Mask m;
  m.len = n;
  m.vals = bitmap_alloc(n, !inside);
  fill_bits_range(m.vals.ptr, a, b, inside);
  return m;
}

// Runs lo <= j < hi of a column, run j covering output rows [starts[j - lo], starts[j - lo + 1])
// (hi - lo + 1 entries: the first 0, the last the output length).
struct RunMap {
  uint64_t lo = 0, hi = 0;
  std::vector<uint64_t> starts;
  uint64_t nruns() const { return hi - lo; }
};

// bit j of `src` (run values) repeated over each run's rows, into a fresh bitmap
inline Buf expand_bits(const uint8_t* src, const RunMap& r, uint64_t n) {
  Buf out = alloc_zeroed(bitmap_bytes(n));
  for (uint64_t j = r.lo; j < r.hi; j++)
    if (get_bit(src, j)) fill_bits_range(out.ptr, r.starts[j - r.lo], r.starts[j - r.lo + 1], true);
  return out;
}

// a per-run mask expanded to the rows
inline Mask expand_mask(const Mask& per_run, const RunMap& r, uint64_t n) {
  Mask m;
  m.len = n;
  m.vals = expand_bits(per_run.vals.data(), r, n);
  if (!per_run.valid.empty()) m.valid = expand_bits(per_run.valid.data(), r, n);
  return m;
}

// The rows of run values `vals` (a decoded column, one row per run) expanded over their
// runs: primitive and bool columns fill, strings repeat their views (no string bytes copied;
// the bytes they stand for are bounded by the limits, as the reference's gather of strings),
// anything else gathers through take_col.
Col expand_col(const Col& vals, const RunMap& r, uint64_t n, Ctx& c);

// Overlay rows of `patch` (row i at base row pos[i]) on `base`, a column this code owns
// (fresh from repeat_scalar): values and validity. Primitive, decimal, bool, string
// (as views), struct and null columns; lists throw NeedPython.
void overlay(Col& base, const Col& patch, const uint64_t* pos, size_t k);

}  // namespace ints
}  // namespace vx
