// Decoding and compute dispatch over encoding trees, with the generic (canonical) kernels
// every encoding falls back to. The semantics are vortex_io.compute's: SQL three-valued
// logic, a predicate result is a Mask (values false wherever the result is null).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "node.h"

namespace vx {

class Ctx {
 public:
  explicit Ctx(const Limits& l) : lim(l) {}
  const Limits& lim;
  bool string_view = false;   // strings decode to Arrow string_view (else string)
  uint64_t canonicalized = 0; // bytes of decoded output (ScanStats.bytes_canonicalized)
  bool keep = false;          // predicates keep the decodes their takes reuse (Node::kept)
};

// A literal in the storage domain of the column it is compared with.
struct Lit {
  enum Kind : uint8_t { Int, Float, Bytes, Bool } kind = Int;
  i128 i = 0;
  double f = 0;
  std::string s;
  bool b = false;
  static Lit of_int(i128 v) { Lit l; l.kind = Int; l.i = v; return l; }
};

// A predicate result over `len` rows: `vals` a bitmap (false where null), `valid` the
// bitmap of non-null results (empty: every result is valid).
struct Mask {
  uint64_t len = 0;
  Buf vals;
  Buf valid;
};

Mask mask_const(uint64_t n, bool value);
Mask mask_null(uint64_t n);
// every valid row gives `answer` (compute._numeric.broadcast)
Mask mask_broadcast(uint64_t n, bool answer, const Buf& validity);
// raw results and a validity (nulls forced to false)
Mask with_validity(Buf vals, Buf validity, uint64_t n);
Mask mask_and(const Mask& a, const Mask& b);
Mask mask_or(const Mask& a, const Mask& b);
Mask mask_not(const Mask& a);
// A std::allocator that leaves new elements uninitialized (a vector of positions is
// written in full by its producer; zero-filling it first was a pass of its own)
template <class T>
struct UninitAlloc : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAlloc<U>;
  };
  UninitAlloc() = default;
  template <class U>
  UninitAlloc(const UninitAlloc<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
using Positions = std::vector<uint32_t, UninitAlloc<uint32_t>>;

// rows a filter keeps (true and valid), as sorted positions
Positions mask_positions(const Mask& m);
uint64_t mask_count(const Mask& m);

// -- decoding ------------------------------------------------------------------------------
// The canonical column of a node (String or View for strings: whichever the node gives).
Col decode(const Node& n, Ctx& c);
// The node's values as integers without nulls (offsets, codes, indices, ...).
Col decode_ints(const Node& n, Ctx& c, const std::string& what);
// A validity child (a non-nullable bool node, or none) as a bitmap (empty: all valid).
Buf decode_validity(const Node* v, uint64_t n, Ctx& c);
// The validity of any node without decoding its values where the encoding can.
Buf node_validity(const Node& n, Ctx& c);
// Strings in the requested output layout, recursively (struct fields, list elements).
void conform(Col& col, const DType& d, bool string_view);
Col to_views(const Col& strings);
Col to_strings(const Col& views);

// -- compute ---------------------------------------------------------------------------------
// compare_storage: `v` in the storage domain (integers may be out of the type's range)
Mask compare(const Node& n, const Lit& v, Op op, Ctx& c);
Mask is_in(const Node& n, const std::vector<Lit>& v, Ctx& c);
Mask is_null(const Node& n, bool negated, Ctx& c);
// rows at sorted in-range positions
Col take(const Node& n, const uint32_t* idx, size_t k, Ctx& c);

// The generic kernels on decoded columns.
Mask compare_col(const Col& col, const DType& d, const Lit& v, Op op);
Mask is_in_col(const Col& col, const DType& d, const std::vector<Lit>& v);
Col take_col(const Col& col, const uint32_t* idx, size_t k);

// The rows (all of them, or idx[0..k)) of a string or binary column (dtype `d`) as the parts
// of an Arrow dictionary array: int32 codes with the rows' validity and the values
// (`string`/`binary` layout). A vortex.dict node hands over its own codes and values
// (nothing gathered); any other node is decoded and its distinct values numbered in
// first-seen order.
void decode_dictionary(const Node& n, const uint32_t* idx, size_t k, bool all, const DType& d,
                       Ctx& c, Col& codes, Col& values);
Buf take_bits(const uint8_t* bits, const uint32_t* idx, size_t k);

// The integer comparison shortcut of compute._kernels._int_range_shortcut: a literal outside
// the type's range answers every row; returns true with `answer` set in that case.
bool int_range_answer(PType p, i128 v, Op op, bool* answer);
// bound_answer: the answer of `x op lit` shared by every x in [lo, hi], if any
bool bound_answer(Op op, i128 lit, i128 lo, i128 hi, bool* answer);
i128 ptype_min(PType p);
i128 ptype_max(PType p);

// `a op b` (Op a comparison).
template <class T, class L>
inline bool op_holds(T a, L b, Op op) {
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Neq: return a != b;
    case Op::Lt: return a < b;
    case Op::Lte: return a <= b;
    case Op::Gt: return a > b;
    default: return a >= b;
  }
}

// Dispatch on an integer/float ptype: fn(T{}) with T the C++ type of p (f16 as uint16_t).
template <class F>
auto with_ptype(PType p, F&& fn) {
  switch (p) {
    case PType::U8: return fn(uint8_t{});
    case PType::U16: return fn(uint16_t{});
    case PType::U32: return fn(uint32_t{});
    case PType::U64: return fn(uint64_t{});
    case PType::I8: return fn(int8_t{});
    case PType::I16: return fn(int16_t{});
    case PType::I32: return fn(int32_t{});
    case PType::I64: return fn(int64_t{});
    case PType::F16: return fn(uint16_t{});
    case PType::F32: return fn(float{});
    case PType::F64: return fn(double{});
  }
  return fn(uint8_t{});
}
template <class F>
auto with_int_ptype(PType p, F&& fn) {
  switch (p) {
    case PType::U8: return fn(uint8_t{});
    case PType::U16: return fn(uint16_t{});
    case PType::U32: return fn(uint32_t{});
    case PType::U64: return fn(uint64_t{});
    case PType::I8: return fn(int8_t{});
    case PType::I16: return fn(int16_t{});
    case PType::I32: return fn(int32_t{});
    default: return fn(int64_t{});
  }
}
// Dispatch on the unsigned type of a ptype's width.
template <class F>
auto with_uint_ptype(PType p, F&& fn) {
  switch (ptype_width(p)) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    default: return fn(uint64_t{});
  }
}
template <class T>
constexpr PType ptype_for() {
  if constexpr (std::is_same_v<T, uint8_t>) return PType::U8;
  else if constexpr (std::is_same_v<T, uint16_t>) return PType::U16;
  else if constexpr (std::is_same_v<T, uint32_t>) return PType::U32;
  else if constexpr (std::is_same_v<T, uint64_t>) return PType::U64;
  else if constexpr (std::is_same_v<T, int8_t>) return PType::I8;
  else if constexpr (std::is_same_v<T, int16_t>) return PType::I16;
  else if constexpr (std::is_same_v<T, int32_t>) return PType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return PType::I64;
  else if constexpr (std::is_same_v<T, float>) return PType::F32;
  else return PType::F64;
}

// Integer values of a decoded integer column read as int64 (u64 above 2^63 wrap: callers
// check ranges themselves), for index-like children.
template <class F>
void for_each_int(const Col& c, F&& fn) {
  with_int_ptype(c.ptype, [&](auto t) {
    using T = decltype(t);
    const T* v = c.vals<T>();
    for (uint64_t i = 0; i < c.len; i++) fn(i, v[i]);
  });
}

}  // namespace vx
