// Col: a decoded (canonical) column in the Arrow memory layout, the output of every native
// decoder and the input of the generic compute kernels. Buffers are refcounted (memory.h)
// and exported to Arrow without copying (arrow_c.cpp). Offsets are always 0: decoders
// re-base sliced bitmaps.
#pragma once

#include <vector>

#include "dtype.h"
#include "memory.h"

namespace vx {

enum class Layout : uint8_t {
  Null,     // no buffers
  Bool,     // values = bitmap
  Prim,     // values = len * width bytes of `ptype`
  Decimal,  // values = len * dec_width bytes (16: decimal128, 32: decimal256)
  String,   // offsets = (len + 1) int32, values = data (Arrow string / binary)
  View,     // values = len * 16-byte views, data = the data buffers (Arrow string_view)
  Struct,   // children = fields
  List,     // offsets = (len + 1) int32, children[0] = elements
  FSL,      // children[0] = len * size elements
};

struct Col {
  Layout layout = Layout::Null;
  PType ptype = PType::U8;
  uint8_t dec_width = 16;
  uint64_t len = 0;
  // validity bitmap at bit 0 (empty: every row valid, or a Null column)
  Buf validity;
  // nulls: exact, or -1 when not yet counted (Arrow accepts -1)
  int64_t null_count = 0;
  Buf values;
  Buf offsets;
  std::vector<Buf> data;
  std::vector<Col> children;
  uint32_t fsl_size = 0;

  bool has_nulls() const { return layout == Layout::Null ? len > 0 : !validity.empty() && null_count != 0; }
  template <class T>
  const T* vals() const { return values.as<T>(); }
};

inline Col prim_col(PType p, Buf values, uint64_t len, Buf validity = Buf(), int64_t nulls = 0) {
  Col c;
  c.layout = Layout::Prim;
  c.ptype = p;
  c.len = len;
  c.values = std::move(values);
  c.validity = std::move(validity);
  c.null_count = c.validity.empty() ? 0 : nulls;
  return c;
}

// A column of `len` rows with c's layout and type (ptype, decimal width, list size), its
// buffers not set yet.
inline Col shaped_like(const Col& c, uint64_t len) {
  Col o;
  o.layout = c.layout;
  o.ptype = c.ptype;
  o.dec_width = c.dec_width;
  o.fsl_size = c.fsl_size;
  o.len = len;
  return o;
}

// -- bitmaps (LSB first; buffers hold whole 64-bit words so word loops need no tail code) --
inline size_t bitmap_bytes(uint64_t nbits) { return size_t((nbits + 63) / 64 * 8); }
inline bool get_bit(const uint8_t* bits, uint64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
inline void set_bit(uint8_t* bits, uint64_t i) { bits[i >> 3] |= uint8_t(1u << (i & 7)); }
inline void clear_bit(uint8_t* bits, uint64_t i) { bits[i >> 3] &= uint8_t(~(1u << (i & 7))); }
Buf bitmap_alloc(uint64_t nbits, bool value);
// bits [off, off + n) of `src` (which holds at least ceil((off + n) / 8) bytes) at bit 0
Buf bitmap_from(const uint8_t* src, uint64_t off, uint64_t n);
// `a` & `b` over n bits at bit 0 (either may be empty: all valid; a fresh bitmap when both
// are given)
inline Buf and_bits(const Buf& a, const Buf& b, uint64_t n) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  Buf out = bitmap_from(a.data(), 0, n);
  const uint8_t* q = b.data();
  for (size_t i = 0; i < size_t((n + 7) >> 3); i++) out.ptr[i] &= q[i];
  return out;
}
uint64_t count_ones(const uint8_t* bits, uint64_t n);
// clear the bits past n in the last word (so word-wise operations see zeros there)
void bitmap_clear_tail(uint8_t* bits, uint64_t n);
// bytes (0/1) -> bits
void pack_bools(const uint8_t* bools, uint64_t n, uint8_t* bits);

// Set null_count from the bitmap and drop a bitmap without nulls.
void normalize_validity(Col& c);
// Null count of a validity bitmap of n bits (0 for an empty one).
inline int64_t nulls_of(const Buf& v, uint64_t n) {
  return v.empty() ? 0 : int64_t(n - count_ones(v.data(), n));
}

}  // namespace vx
