// Strict patch positions (the twin of encodings/_sparse.py strict_patch_positions), used by
// vortex.alp and vortex.alprd: every patch must fall inside the node, and the indices must
// be sorted (patch_positions in patches.h drops out-of-range ones instead, as bit-packing
// does).
#pragma once

#include "patches.h"

namespace vx {

// Positions `indices[k] - offset` of the m.len patches (a Buf of m.len uint64_t, empty when
// there are none), checked in the reference's order: no nulls, no u64 index >= 2^63, sorted,
// inside [0, n). `what` names the encoding in the messages.
inline Buf strict_patch_positions(const PatchesMeta& m, const Node& indices, uint64_t n,
                                  const char* what, Ctx& c) {
  if (m.len == 0) return Buf();
  Col idx = decode_ints(indices, c, cat(what, " patch indices"));
  const uint64_t k = idx.len;
  if (k == 0) return Buf();
  bool big = false;
  if (idx.ptype == PType::U64) {
    const uint64_t* v = idx.vals<uint64_t>();
    uint64_t mx = 0;
    for (uint64_t i = 0; i < k; i++) mx = v[i] > mx ? v[i] : mx;
    big = mx >= (uint64_t(1) << 63);
  }
  if (big) malformed(what, ": a patch index does not fit in 63 bits");
  // (the reference subtracts the offset as an int64: one past INT64_MAX cannot be one)
  if (m.offset > uint64_t(INT64_MAX)) malformed(what, ": patch offset ", m.offset, " is out of range");
  const int64_t off = int64_t(m.offset);
  Buf out = alloc(size_t(k) * 8);
  uint64_t* o = out.mut<uint64_t>();
  bool sorted = true;
  int64_t first = 0, last = 0;
  with_int_ptype(idx.ptype, [&](auto t) {
    using T = decltype(t);
    const T* v = idx.vals<T>();
    // wrapping (unsigned) subtraction: the indices are unsigned below 2^63 and so is the
    // offset, so it never wraps; it keeps the arithmetic defined whatever the input
    auto at = [&](uint64_t i) { return int64_t(uint64_t(int64_t(v[i])) - uint64_t(off)); };
    int64_t prev = at(0);
    first = prev;
    for (uint64_t i = 0; i < k; i++) {
      int64_t p = at(i);
      sorted &= p >= prev;
      prev = p;
      o[i] = uint64_t(p);
    }
    last = prev;
  });
  if (!sorted) malformed(what, ": patch indices are not sorted");
  if (first < 0 || uint64_t(last) >= n)
    malformed(what, ": patch at position ", first < 0 ? first : last, " is outside the ", n, " rows");
  return out;
}

}  // namespace vx
