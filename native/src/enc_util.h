// Helpers shared by the native encodings (the native twin of encodings/_common.py).
#pragma once

#include <cstdlib>

#include "kernels.h"
#include "proto.h"

namespace vx {

// A (validity) child at index `i` when present
inline const Node* opt_child(const Node& n, size_t i) {
  return i < n.children.size() ? n.children[i] : nullptr;
}

// Buffer `i` holding at least `count` values of `width` bytes (typed_buffer/typed_view).
inline const Buf& typed_buffer(const Node& n, size_t i, uint64_t count, int width, const char* tname) {
  if (i >= n.buffers.size()) malformed(n.enc_id, ": buffer ", i, " is missing");
  const Buf& b = n.buffers[i];
  uint64_t need = sat_mul(count, uint64_t(width));
  if (b.len < need)
    malformed(n.enc_id, ": buffer of ", b.len, " bytes is too short for ", count, " x ", tname);
  return b;
}

// `out` given the validity of `n`'s optional validity child `k` (the tail of a canonical
// decode: the null count left to be counted).
inline Col with_child_validity(Col out, const Node& n, size_t k, Ctx& c) {
  out.validity = decode_validity(opt_child(n, k), n.len, c);
  out.null_count = -1;
  normalize_validity(out);
  return out;
}

// The base of an encoding whose validity is its optional child K (validity_spec(n, K, ...)):
// validity() reads that child alone, without the values.
template <size_t K>
class ChildValidityEncoding : public Encoding {
 public:
  using Encoding::Encoding;
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = decode_validity(opt_child(n, K), n.len, c);
    return true;
  }

 protected:
  static Col with_own_validity(Col out, const Node& n, Ctx& c) {
    return with_child_validity(std::move(out), n, K, c);
  }
};

// A buffer the kernels read as `width`-byte values, copied when the wire left it misaligned
// (a writer may declare an alignment exponent below the type's; the reader copies only
// what the exponent asks for): typed loads of misaligned memory are undefined behaviour.
inline Buf aligned_to(const Buf& b, size_t width) {
  if (reinterpret_cast<uintptr_t>(b.ptr) % width == 0) return b;
  return copy_of(b.ptr, b.len);
}

template <class M>
M& make_meta(Node& n) {
  auto m = std::make_unique<M>();
  M& r = *m;
  n.meta = std::move(m);
  return r;
}

// A column of `n` values of T in fresh memory.
template <class T>
Col new_prim(PType p, uint64_t n) {
  return prim_col(p, alloc(size_t(n * sizeof(T))), n);
}

// Widen/narrow integers of width `from` into T (sign- or zero-extending by `from_signed`).
template <class T>
void convert_ints(const Col& src, T* dst) {
  with_int_ptype(src.ptype, [&](auto t) {
    using S = decltype(t);
    const S* s = src.vals<S>();
    for (uint64_t i = 0; i < src.len; i++) dst[i] = T(s[i]);
  });
}

// Integer offsets (any integer ptype) -> int32 Arrow offsets, checked: non-negative,
// non-decreasing, the last at most `data_len` (check_offsets).
Buf arrow_offsets(const Col& offsets, uint64_t data_len, const std::string& what, int64_t* first);

// The Col of `n` copies of a scalar.
Col repeat_scalar(const Scalar& s, const DType& d, uint64_t n, Ctx& c);

// -- nested columns (concat.cpp) ---------------------------------------------------------------
// Builds a bitmap of `total` bits from pieces appended in order (zero-initialized, whole words).
struct BitBuilder {
  Buf buf;
  uint64_t pos = 0;
  explicit BitBuilder(uint64_t total) : buf(alloc_zeroed(bitmap_bytes(total))) {}
  // bits [0, n) of `src`
  void append(const uint8_t* src, uint64_t n);
  void append_ones(uint64_t n);
  void append_zeros(uint64_t n) { pos += n; }
};
// The rows of `parts` one after another (the parts share a layout: conform them first;
// List elements are joined whole and the offsets shifted). UnsupportedError past the int32
// offsets of Arrow's string and list layouts.
Col concat_cols(std::vector<Col>& parts);
// Rows [off, off + n) of a column (in range), zero-copy where the layout allows.
Col slice_col(const Col& c, uint64_t off, uint64_t n);
// A column of no rows of dtype `d`.
Col empty_col(const DType& d, Ctx& c);
// A Col of integers without nulls (decode_ints for an already decoded column).
void check_ints(const Col& col, const std::string& what, const DType& d);

}  // namespace vx
