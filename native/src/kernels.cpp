#include "kernels.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace vx {

// -- Encoding defaults: nothing handled on the encoded node ---------------------------------
bool Encoding::compare(const Node&, const Lit&, Op, Mask&, Ctx&) const { return false; }
bool Encoding::is_in(const Node&, const std::vector<Lit>&, Mask&, Ctx&) const { return false; }
bool Encoding::take(const Node&, const uint32_t*, size_t, Col&, Ctx&) const { return false; }
bool Encoding::validity(const Node&, Buf&, Ctx&) const { return false; }
bool Encoding::int_bounds(const Node&, i128&, i128&, Ctx&) const { return false; }

// -- masks ------------------------------------------------------------------------------------

Mask mask_const(uint64_t n, bool value) {
  Mask m;
  m.len = n;
  m.vals = bitmap_alloc(n, value);
  return m;
}

Mask mask_null(uint64_t n) {
  Mask m;
  m.len = n;
  m.vals = bitmap_alloc(n, false);
  m.valid = bitmap_alloc(n, false);
  return m;
}

Mask mask_broadcast(uint64_t n, bool answer, const Buf& validity) {
  if (validity.empty()) return mask_const(n, answer);
  Mask m;
  m.len = n;
  m.valid = bitmap_from(validity.data(), 0, n);
  m.vals = answer ? bitmap_from(validity.data(), 0, n) : bitmap_alloc(n, false);
  return m;
}

Mask with_validity(Buf vals, Buf validity, uint64_t n) {
  Mask m;
  m.len = n;
  m.vals = std::move(vals);
  if (!validity.empty()) {
    const uint8_t* v = validity.data();
    uint8_t* o = m.vals.ptr;
    size_t nb = size_t((n + 7) >> 3);
    for (size_t i = 0; i < nb; i++) o[i] &= v[i];
    m.valid = std::move(validity);
  }
  return m;
}

namespace {
// word-wise loop over k = ceil(n / 64) words of bitmaps allocated by bitmap_alloc (whole
// words); external bitmaps are copied into whole words first
Buf words_of(const Buf& b, uint64_t n) {
  // read as uint64_t words: whole words, 8-byte aligned (a bitmap borrowed from a message
  // body may start anywhere), else a copy
  if (b.len >= bitmap_bytes(n) && reinterpret_cast<uintptr_t>(b.data()) % alignof(uint64_t) == 0) return b;
  return bitmap_from(b.data(), 0, n);
}
}  // namespace

namespace {
// mask_and (And) or mask_or, word-wise. A result is valid where both sides are, or where
// one valid side decides it alone (a false for AND, a true for OR):
//   AND: valid = (a_ok & b_ok) | (a_ok & ~av) | (b_ok & ~bv); vals = av & bv & valid
//   OR:  valid = (a_ok & b_ok) | (a_ok & av) | (b_ok & bv);   vals = (av | bv) & valid
template <bool And>
Mask mask_combine(const Mask& a, const Mask& b) {
  uint64_t n = a.len;
  size_t words = size_t((n + 63) / 64);
  Buf av = words_of(a.vals, n), bv = words_of(b.vals, n);
  Mask m;
  m.len = n;
  m.vals = alloc(bitmap_bytes(n));
  uint64_t* o = m.vals.mut<uint64_t>();
  const uint64_t* x = av.as<uint64_t>();
  const uint64_t* y = bv.as<uint64_t>();
  if (a.valid.empty() && b.valid.empty()) {
    for (size_t i = 0; i < words; i++) o[i] = And ? x[i] & y[i] : x[i] | y[i];
    bitmap_clear_tail(m.vals.ptr, n);
    return m;
  }
  Buf ones;
  if (a.valid.empty() || b.valid.empty()) ones = bitmap_alloc(n, true);
  Buf aok = a.valid.empty() ? ones : words_of(a.valid, n);
  Buf bok = b.valid.empty() ? ones : words_of(b.valid, n);
  const uint64_t* p = aok.as<uint64_t>();
  const uint64_t* q = bok.as<uint64_t>();
  m.valid = alloc(bitmap_bytes(n));
  uint64_t* v = m.valid.mut<uint64_t>();
  for (size_t i = 0; i < words; i++) {
    uint64_t xd = And ? ~x[i] : x[i], yd = And ? ~y[i] : y[i];  // the deciding values
    uint64_t val = (p[i] & q[i]) | (p[i] & xd) | (q[i] & yd);
    v[i] = val;
    o[i] = (And ? x[i] & y[i] : x[i] | y[i]) & val;
  }
  bitmap_clear_tail(m.vals.ptr, n);
  bitmap_clear_tail(m.valid.ptr, n);
  return m;
}
}  // namespace

Mask mask_and(const Mask& a, const Mask& b) { return mask_combine<true>(a, b); }
Mask mask_or(const Mask& a, const Mask& b) { return mask_combine<false>(a, b); }

Mask mask_not(const Mask& a) {
  uint64_t n = a.len;
  size_t words = size_t((n + 63) / 64);
  Buf av = words_of(a.vals, n);
  Mask m;
  m.len = n;
  m.vals = alloc(bitmap_bytes(n));
  uint64_t* o = m.vals.mut<uint64_t>();
  const uint64_t* x = av.as<uint64_t>();
  if (a.valid.empty()) {
    for (size_t i = 0; i < words; i++) o[i] = ~x[i];
  } else {
    Buf ok = words_of(a.valid, n);
    const uint64_t* p = ok.as<uint64_t>();
    for (size_t i = 0; i < words; i++) o[i] = ~x[i] & p[i];
    m.valid = ok;
  }
  bitmap_clear_tail(m.vals.ptr, n);
  return m;
}

namespace {
// The rows a mask keeps (true and valid), a word at a time (the bits past len cleared).
struct KeptWords {
  uint64_t n;
  size_t words;
  Buf v, ok;
  const uint64_t* x;
  const uint64_t* p;
  explicit KeptWords(const Mask& m) : n(m.len), words(size_t((n + 63) / 64)), v(words_of(m.vals, n)) {
    if (!m.valid.empty()) ok = words_of(m.valid, n);
    x = v.as<uint64_t>();
    p = ok.empty() ? nullptr : ok.as<uint64_t>();
  }
  uint64_t word(size_t i) const {
    uint64_t w = x[i] & (p ? p[i] : ~uint64_t(0));
    if (i + 1 == words && (n & 63)) w &= (uint64_t(1) << (n & 63)) - 1;
    return w;
  }
  uint64_t count() const {
    uint64_t total = 0;
    for (size_t i = 0; i < words; i++) total += uint64_t(__builtin_popcountll(word(i)));
    return total;
  }
};
}  // namespace

namespace {
// For each byte: the positions of its set bits, packed one per byte (low byte first)
struct ByteOffsets {
  uint64_t offs[256];
  constexpr ByteOffsets() : offs() {
    for (unsigned b = 0; b < 256; b++) {
      uint64_t v = 0;
      unsigned k = 0;
      for (unsigned j = 0; j < 8; j++)
        if ((b >> j) & 1) v |= uint64_t(j) << (8 * k++);
      offs[b] = v;
    }
  }
};
constexpr ByteOffsets kByteOffsets;
}  // namespace

// Dense words go a byte at a time through a table (eight unconditional stores a byte, the
// cursor moved by its popcount: no branch on the data), sparse ones bit by bit. The table
// writes up to 7 slots past the last position: the vector has 8 of slack, cut at the end.
Positions mask_positions(const Mask& m) {
  KeptWords k(m);
  const uint64_t count = k.count();
  Positions out(size_t(count) + 8);
  uint32_t* o = out.data();
  for (size_t i = 0; i < k.words; i++) {
    uint64_t w = k.word(i);
    const uint32_t base = uint32_t(i * 64);
    if (w == ~uint64_t(0)) {
      for (uint32_t j = 0; j < 64; j++) o[j] = base + j;
      o += 64;
    } else if (__builtin_popcountll(w) <= 8) {
      while (w) {
        *o++ = base + uint32_t(__builtin_ctzll(w));
        w &= w - 1;
      }
    } else {
      for (uint32_t b = 0; b < 8; b++) {
        const unsigned byte = unsigned(w >> (8 * b)) & 0xFF;
        const uint64_t offs = kByteOffsets.offs[byte];
        const uint32_t bb = base + 8 * b;
#if defined(__SSE2__)
        // the 8 offsets widened to 32 bits (SSE2, the x86-64 baseline), the base added
        const __m128i zero = _mm_setzero_si128();
        const __m128i v16 = _mm_unpacklo_epi8(_mm_cvtsi64_si128(int64_t(offs)), zero);
        const __m128i bv = _mm_set1_epi32(int(bb));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm_add_epi32(_mm_unpacklo_epi16(v16, zero), bv));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 4), _mm_add_epi32(_mm_unpackhi_epi16(v16, zero), bv));
#else
        for (unsigned j = 0; j < 8; j++) o[j] = bb + uint32_t((offs >> (8 * j)) & 0xFF);
#endif
        o += __builtin_popcount(byte);
      }
    }
  }
  out.resize(size_t(count));
  return out;
}

uint64_t mask_count(const Mask& m) { return KeptWords(m).count(); }

// -- decoding dispatch --------------------------------------------------------------------------

Col decode(const Node& n, Ctx& c) {
  if (!n.enc) throw NeedPython();
  return n.enc->decode(n, c);
}

Col decode_ints(const Node& n, Ctx& c, const std::string& what) {
  Col col = decode(n, c);
  if (col.layout != Layout::Prim || !ptype_is_int(col.ptype))
    malformed(what, " must be integers, not ", dtype_repr(*n.dtype));
  if (col.has_nulls()) {
    normalize_validity(col);
    if (col.null_count) malformed(what, " contain nulls");
  }
  return col;
}

bool constant_bool_value(const Node& n, int* v);  // enc_constant.cpp

Buf decode_validity(const Node* v, uint64_t n, Ctx& c) {
  if (!v) return Buf();
  int cv;
  if (constant_bool_value(*v, &cv)) {
    if (cv == 1) return Buf();
    return bitmap_alloc(n, false);
  }
  Col b = decode(*v, c);
  if (b.layout != Layout::Bool) malformed("a validity child must be boolean, not ", v->enc_id);
  if (b.len != n) malformed("a validity child of ", b.len, " rows for ", n);
  Buf bits = b.values;
  if (!b.validity.empty()) {
    Buf out = bitmap_from(bits.data(), 0, n);
    const uint8_t* q = b.validity.data();
    for (size_t i = 0; i < size_t((n + 7) >> 3); i++) out.ptr[i] &= q[i];
    bits = out;
  }
  if (count_ones(bits.data(), n) == n) return Buf();
  return bits;
}

Buf node_validity(const Node& n, Ctx& c) {
  if (!n.dtype->nullable) return Buf();
  if (!n.enc) throw NeedPython();
  Buf out;
  if (n.enc->validity(n, out, c)) return out;
  Col col = decode(n, c);
  if (col.layout == Layout::Null) return bitmap_alloc(n.len, false);
  if (col.validity.empty()) return Buf();
  if (count_ones(col.validity.data(), n.len) == n.len) return Buf();
  return col.validity;
}

Col to_views(const Col& s) {
  Col v;
  v.layout = Layout::View;
  v.len = s.len;
  v.validity = s.validity;
  v.null_count = s.null_count;
  v.values = alloc(size_t(16 * s.len));
  const int32_t* o = s.offsets.as<int32_t>();
  const uint8_t* d = s.values.data();
  uint8_t* out = v.values.ptr;
  for (uint64_t i = 0; i < s.len; i++) {
    int32_t a = o[i], len = o[i + 1] - o[i];
    uint8_t* w = out + 16 * i;
    std::memset(w, 0, 16);
    std::memcpy(w, &len, 4);
    if (len <= 12) {
      if (len) std::memcpy(w + 4, d + a, size_t(len));
    } else {
      std::memcpy(w + 4, d + a, 4);
      int32_t zero = 0;
      std::memcpy(w + 8, &zero, 4);
      std::memcpy(w + 12, &a, 4);
    }
  }
  if (!s.values.empty()) v.data.push_back(s.values);
  return v;
}

Col to_strings(const Col& v) {
  Col s;
  s.layout = Layout::String;
  s.len = v.len;
  s.validity = v.validity;
  s.null_count = v.null_count;
  s.offsets = alloc(size_t(4 * (v.len + 1)));
  int32_t* o = s.offsets.mut<int32_t>();
  const uint8_t* views = v.values.data();
  uint64_t total = 0;
  for (uint64_t i = 0; i < v.len; i++) total += load<uint32_t>(views + 16 * i);
  if (total > 0x7FFFFFFF) unsupported("a message of strings over 2 GiB cannot decode to Arrow string");
  s.values = alloc(size_t(total));
  uint8_t* d = s.values.ptr;
  int64_t pos = 0;
  o[0] = 0;
  for (uint64_t i = 0; i < v.len; i++) {
    const uint8_t* w = views + 16 * i;
    uint32_t len = load<uint32_t>(w);
    if (len <= 12) {
      if (len) std::memcpy(d + pos, w + 4, len);  // (d is null when every string is empty)
    } else {
      uint32_t bi = load<uint32_t>(w + 8), off = load<uint32_t>(w + 12);
      std::memcpy(d + pos, v.data[bi].data() + off, len);
    }
    pos += len;
    o[i + 1] = int32_t(pos);
  }
  return s;
}

void conform(Col& col, const DType& d, bool string_view) {
  const DType& s = d.storage();
  if (s.is_string_like()) {
    if (string_view && col.layout == Layout::String) col = to_views(col);
    else if (!string_view && col.layout == Layout::View) col = to_strings(col);
    return;
  }
  if (s.kind == Kind::Struct && col.layout == Layout::Struct) {
    for (size_t i = 0; i < col.children.size() && i < s.children.size(); i++)
      conform(col.children[i], *s.children[i], string_view);
  } else if ((s.kind == Kind::List || s.kind == Kind::FixedSizeList) && !col.children.empty()) {
    conform(col.children[0], *s.children[0], string_view);
  }
}

// -- literals and integer ranges ------------------------------------------------------------------

i128 ptype_min(PType p) {
  if (ptype_is_unsigned(p)) return 0;
  return -(i128(1) << (8 * ptype_width(p) - 1));
}
i128 ptype_max(PType p) {
  if (ptype_is_unsigned(p)) return (i128(1) << (8 * ptype_width(p))) - 1;
  return (i128(1) << (8 * ptype_width(p) - 1)) - 1;
}

bool int_range_answer(PType p, i128 v, Op op, bool* answer) {
  if (v < ptype_min(p)) {
    *answer = op == Op::Neq || op == Op::Gt || op == Op::Gte;
    return true;
  }
  if (v > ptype_max(p)) {
    *answer = op == Op::Neq || op == Op::Lt || op == Op::Lte;
    return true;
  }
  return false;
}

bool bound_answer(Op op, i128 lit, i128 lo, i128 hi, bool* a) {
  if (lit < lo) {
    *a = op == Op::Neq || op == Op::Gt || op == Op::Gte;
    return true;
  }
  if (lit > hi) {
    *a = op == Op::Neq || op == Op::Lt || op == Op::Lte;
    return true;
  }
  if (lo == hi) {
    *a = op == Op::Eq || op == Op::Lte || op == Op::Gte;
    return true;
  }
  if (lit == lo) {
    if (op == Op::Lt) { *a = false; return true; }
    if (op == Op::Gte) { *a = true; return true; }
  }
  if (lit == hi) {
    if (op == Op::Gt) { *a = false; return true; }
    if (op == Op::Lte) { *a = true; return true; }
  }
  return false;
}

namespace {

uint16_t double_to_half(double v) {
  uint64_t x;
  std::memcpy(&x, &v, 8);
  uint16_t sign = uint16_t((x >> 48) & 0x8000);
  int e = int((x >> 52) & 0x7FF);
  uint64_t man = x & ((uint64_t(1) << 52) - 1);
  if (e == 0x7FF) return uint16_t(sign | 0x7C00 | (man ? 0x200 : 0));
  if (e == 0 && man == 0) return sign;
  int exp = e - 1023;  // value = 1.man * 2^exp (normal doubles; subnormal doubles are tiny)
  if (e == 0) return sign;
  if (exp > 15) return uint16_t(sign | 0x7C00);
  uint64_t full = man | (uint64_t(1) << 52);  // 53-bit significand
  int shift;                                   // bits to drop from the 53-bit significand
  uint16_t hexp;
  if (exp >= -14) {
    shift = 42;  // keep 11 bits (1 + 10)
    hexp = uint16_t(exp + 15);
  } else {
    shift = 42 + (-14 - exp);  // subnormal half
    hexp = 0;
    if (shift > 63) return sign;
  }
  uint64_t kept = full >> shift;
  uint64_t rem = full & ((uint64_t(1) << shift) - 1);
  uint64_t half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (kept & 1))) kept++;
  if (hexp == 0) return uint16_t(sign | kept);  // may carry into the smallest normal: fine
  // kept has 11 bits (or 12 after a carry)
  uint32_t r = (uint32_t(hexp) << 10) + uint32_t(kept - (uint64_t(1) << 10));
  if (r >= 0x7C00) return uint16_t(sign | 0x7C00);
  return uint16_t(sign | r);
}

float double_to_float(double v) {
  if (std::isnan(v)) return std::numeric_limits<float>::quiet_NaN();
  double a = std::fabs(v);
  if (std::isinf(v) || a >= double(FLT_MAX) + std::ldexp(1.0, 103))
    return v < 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  if (a > double(FLT_MAX)) return v < 0 ? -FLT_MAX : FLT_MAX;
  return float(v);
}

// out bit i = pred(i), for i < n (out has whole words)
template <class P>
void fill_bits(uint8_t* out, uint64_t n, P&& pred) {
  uint64_t full = n >> 3;
  for (uint64_t k = 0; k < full; k++) {
    uint8_t b = 0;
    uint64_t base = k << 3;
    for (unsigned j = 0; j < 8; j++) b |= uint8_t(pred(base + j)) << j;
    out[k] = b;
  }
  if (n & 7) {
    uint8_t b = 0;
    for (uint64_t i = full << 3; i < n; i++) b |= uint8_t(pred(i)) << (i & 7);
    out[full] = b;
  }
}

template <class T>
Buf compare_values(const T* v, uint64_t n, T lit, Op op) {
  Buf out = alloc_zeroed(bitmap_bytes(n));
  switch (op) {
    case Op::Eq: fill_bits(out.ptr, n, [&](uint64_t i) { return v[i] == lit; }); break;
    case Op::Neq: fill_bits(out.ptr, n, [&](uint64_t i) { return v[i] != lit; }); break;
    case Op::Lt: fill_bits(out.ptr, n, [&](uint64_t i) { return v[i] < lit; }); break;
    case Op::Lte: fill_bits(out.ptr, n, [&](uint64_t i) { return v[i] <= lit; }); break;
    case Op::Gt: fill_bits(out.ptr, n, [&](uint64_t i) { return v[i] > lit; }); break;
    default: fill_bits(out.ptr, n, [&](uint64_t i) { return v[i] >= lit; }); break;
  }
  return out;
}

int compare_bytes(const uint8_t* a, size_t an, const uint8_t* b, size_t bn) {
  size_t m = an < bn ? an : bn;
  int r = m ? std::memcmp(a, b, m) : 0;
  if (r) return r;
  return an < bn ? -1 : (an > bn ? 1 : 0);
}

// (pointer, length) of string i of a String or View column
inline Bytes str_at(const Col& c, uint64_t i) {
  if (c.layout == Layout::String) {
    const int32_t* o = c.offsets.as<int32_t>();
    return Bytes(c.values.data() + o[i], size_t(o[i + 1] - o[i]));
  }
  const uint8_t* w = c.values.data() + 16 * i;
  uint32_t len = load<uint32_t>(w);
  if (len <= 12) return Bytes(w + 4, len);
  return Bytes(c.data[load<uint32_t>(w + 8)].data() + load<uint32_t>(w + 12), len);
}

i128 decimal_at(const Col& c, uint64_t i) {
  if (c.dec_width == 16) return load<i128>(c.values.data() + 16 * i);
  // 256-bit: compare via the high part's sign when it does not fit (rare); here the
  // caller only asks for values that fit 128 bits
  return load<i128>(c.values.data() + 32 * i);
}

// sign-aware compare of a 256-bit little-endian value with a 128-bit literal
int cmp256(const uint8_t* v, i128 lit) {
  // high 128 bits of v
  i128 hi = load<i128>(v + 16);
  u128 lo = load<u128>(v);
  i128 lit_hi = lit < 0 ? -1 : 0;
  if (hi != lit_hi) return hi < lit_hi ? -1 : 1;
  u128 ul = u128(lit);
  return lo < ul ? -1 : (lo > ul ? 1 : 0);
}

}  // namespace

Mask compare_col(const Col& col, const DType& d, const Lit& v, Op op) {
  uint64_t n = col.len;
  if (col.layout == Layout::Null) return mask_null(n);
  Buf bits;
  switch (col.layout) {
    case Layout::Prim: {
      PType p = col.ptype;
      if (ptype_is_int(p)) {
        bool ans;
        if (v.kind != Lit::Int) unsupported("integer column compared with a non-integer literal");
        if (int_range_answer(p, v.i, op, &ans)) return mask_broadcast(n, ans, col.validity);
        bits = with_int_ptype(p, [&](auto t) {
          using T = decltype(t);
          return compare_values<T>(col.vals<T>(), n, T(v.i), op);
        });
      } else {
        double lit = v.kind == Lit::Float ? v.f : double(v.i);
        if (p == PType::F64) {
          bits = compare_values<double>(col.vals<double>(), n, lit, op);
        } else if (p == PType::F32) {
          bits = compare_values<float>(col.vals<float>(), n, double_to_float(lit), op);
        } else {
          float l = half_to_float(double_to_half(lit));
          const uint16_t* h = col.vals<uint16_t>();
          bits = alloc_zeroed(bitmap_bytes(n));
          fill_bits(bits.ptr, n, [&](uint64_t i) { return op_holds(half_to_float(h[i]), l, op); });
        }
      }
      break;
    }
    case Layout::Bool: {
      if (v.kind != Lit::Bool) unsupported("bool column compared with a non-bool literal");
      const uint8_t* b = col.values.data();
      bool lit = v.b;
      bits = alloc_zeroed(bitmap_bytes(n));
      fill_bits(bits.ptr, n, [&](uint64_t i) { return op_holds(get_bit(b, i), lit, op); });
      break;
    }
    case Layout::String:
    case Layout::View: {
      if (v.kind != Lit::Bytes) unsupported("string column compared with a non-string literal");
      const uint8_t* lp = reinterpret_cast<const uint8_t*>(v.s.data());
      size_t ln = v.s.size();
      bits = alloc_zeroed(bitmap_bytes(n));
      if (op == Op::Eq || op == Op::Neq) {
        bool want = op == Op::Eq;
        fill_bits(bits.ptr, n, [&](uint64_t i) {
          Bytes s = str_at(col, i);
          bool eq = s.n == ln && (ln == 0 || std::memcmp(s.p, lp, ln) == 0);
          return eq == want;
        });
      } else {
        fill_bits(bits.ptr, n, [&](uint64_t i) {
          Bytes s = str_at(col, i);
          return op_holds(compare_bytes(s.p, s.n, lp, ln), 0, op);
        });
      }
      break;
    }
    case Layout::Decimal: {
      if (v.kind != Lit::Int) unsupported("decimal column compared with a non-integer literal");
      bits = alloc_zeroed(bitmap_bytes(n));
      if (col.dec_width == 16) {
        const uint8_t* base = col.values.data();
        fill_bits(bits.ptr, n, [&](uint64_t i) { return op_holds(load<i128>(base + 16 * i), v.i, op); });
      } else {
        const uint8_t* base = col.values.data();
        fill_bits(bits.ptr, n, [&](uint64_t i) { return op_holds(cmp256(base + 32 * i, v.i), 0, op); });
      }
      break;
    }
    default:
      unsupported("comparisons on ", dtype_repr(d), " columns are not supported natively");
  }
  (void)decimal_at;
  return with_validity(std::move(bits), col.validity.empty() ? Buf() : bitmap_from(col.validity.data(), 0, n), n);
}

Mask is_in_col(const Col& col, const DType& d, const std::vector<Lit>& lits) {
  uint64_t n = col.len;
  if (col.layout == Layout::Null) return mask_null(n);
  Buf bits = alloc_zeroed(bitmap_bytes(n));
  switch (col.layout) {
    case Layout::Prim: {
      PType p = col.ptype;
      if (ptype_is_int(p)) {
        with_int_ptype(p, [&](auto t) {
          using T = decltype(t);
          std::vector<T> keep;
          for (const Lit& l : lits)
            if (l.kind == Lit::Int && l.i >= ptype_min(p) && l.i <= ptype_max(p)) keep.push_back(T(l.i));
          std::sort(keep.begin(), keep.end());
          keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
          const T* v = col.vals<T>();
          if (keep.size() <= 8) {
            fill_bits(bits.ptr, n, [&](uint64_t i) {
              for (T k : keep)
                if (v[i] == k) return true;
              return false;
            });
          } else {
            fill_bits(bits.ptr, n, [&](uint64_t i) { return std::binary_search(keep.begin(), keep.end(), v[i]); });
          }
        });
      } else {
        // floats match by bit pattern; NaN matches NaN (Arrow's is_in)
        bool nan = false;
        if (p == PType::F64) {
          std::vector<uint64_t> keep;
          for (const Lit& l : lits) {
            double x = l.kind == Lit::Float ? l.f : double(l.i);
            if (std::isnan(x)) { nan = true; continue; }
            uint64_t b; std::memcpy(&b, &x, 8); keep.push_back(b);
          }
          const uint64_t* v = col.vals<uint64_t>();
          const double* fv = col.vals<double>();
          fill_bits(bits.ptr, n, [&](uint64_t i) {
            if (nan && std::isnan(fv[i])) return true;
            for (uint64_t k : keep) if (v[i] == k) return true;
            return false;
          });
        } else if (p == PType::F32) {
          std::vector<uint32_t> keep;
          for (const Lit& l : lits) {
            float x = double_to_float(l.kind == Lit::Float ? l.f : double(l.i));
            if (std::isnan(x)) { nan = true; continue; }
            uint32_t b; std::memcpy(&b, &x, 4); keep.push_back(b);
          }
          const uint32_t* v = col.vals<uint32_t>();
          const float* fv = col.vals<float>();
          fill_bits(bits.ptr, n, [&](uint64_t i) {
            if (nan && std::isnan(fv[i])) return true;
            for (uint32_t k : keep) if (v[i] == k) return true;
            return false;
          });
        } else {
          std::vector<uint16_t> keep;
          for (const Lit& l : lits) {
            uint16_t h = double_to_half(l.kind == Lit::Float ? l.f : double(l.i));
            if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) { nan = true; continue; }
            keep.push_back(h);
          }
          const uint16_t* v = col.vals<uint16_t>();
          fill_bits(bits.ptr, n, [&](uint64_t i) {
            if (nan && (v[i] & 0x7C00) == 0x7C00 && (v[i] & 0x3FF)) return true;
            for (uint16_t k : keep) if (v[i] == k) return true;
            return false;
          });
        }
      }
      break;
    }
    case Layout::Bool: {
      bool want_t = false, want_f = false;
      for (const Lit& l : lits)
        if (l.kind == Lit::Bool) (l.b ? want_t : want_f) = true;
      const uint8_t* b = col.values.data();
      fill_bits(bits.ptr, n, [&](uint64_t i) { return get_bit(b, i) ? want_t : want_f; });
      break;
    }
    case Layout::String:
    case Layout::View: {
      std::vector<std::string_view> keep;
      for (const Lit& l : lits)
        if (l.kind == Lit::Bytes) keep.push_back(l.s);
      fill_bits(bits.ptr, n, [&](uint64_t i) {
        Bytes s = str_at(col, i);
        for (auto k : keep)
          if (k.size() == s.n && (s.n == 0 || std::memcmp(k.data(), s.p, s.n) == 0)) return true;
        return false;
      });
      break;
    }
    case Layout::Decimal: {
      std::vector<i128> keep;
      for (const Lit& l : lits)
        if (l.kind == Lit::Int) keep.push_back(l.i);
      const uint8_t* base = col.values.data();
      fill_bits(bits.ptr, n, [&](uint64_t i) {
        for (i128 k : keep) {
          if (col.dec_width == 16 ? load<i128>(base + 16 * i) == k : cmp256(base + 32 * i, k) == 0) return true;
        }
        return false;
      });
      break;
    }
    default:
      unsupported("IN on ", dtype_repr(d), " columns is not supported natively");
  }
  return with_validity(std::move(bits), col.validity.empty() ? Buf() : bitmap_from(col.validity.data(), 0, n), n);
}

// -- compute dispatch ----------------------------------------------------------------------------

Mask compare(const Node& n, const Lit& v, Op op, Ctx& c) {
  const DType& s = n.dtype->storage();
  if (s.kind == Kind::Primitive && ptype_is_int(s.ptype) && v.kind == Lit::Int) {
    bool ans;
    if (int_range_answer(s.ptype, v.i, op, &ans)) return mask_broadcast(n.len, ans, node_validity(n, c));
  }
  if (!n.enc) throw NeedPython();
  Mask out;
  if (n.enc->compare(n, v, op, out, c)) return out;
  return compare_col(decode(n, c), s, v, op);
}

Mask is_in(const Node& n, const std::vector<Lit>& v, Ctx& c) {
  if (v.empty()) {
    Mask m = mask_const(n.len, false);
    m.valid = node_validity(n, c);
    return m;
  }
  if (!n.enc) throw NeedPython();
  Mask out;
  if (n.enc->is_in(n, v, out, c)) return out;
  return is_in_col(decode(n, c), n.dtype->storage(), v);
}

Mask is_null(const Node& n, bool negated, Ctx& c) {
  Buf v = node_validity(n, c);
  Mask m;
  m.len = n.len;
  if (v.empty()) {
    m.vals = bitmap_alloc(n.len, negated);
    return m;
  }
  if (negated) {
    m.vals = bitmap_from(v.data(), 0, n.len);
  } else {
    m.vals = bitmap_from(v.data(), 0, n.len);
    uint8_t* o = m.vals.ptr;
    for (size_t i = 0; i < bitmap_bytes(n.len); i++) o[i] = uint8_t(~o[i]);
    bitmap_clear_tail(o, n.len);
  }
  return m;
}

// -- take ------------------------------------------------------------------------------------------

Buf take_bits(const uint8_t* bits, const uint32_t* idx, size_t k) {
  Buf out = alloc_zeroed(bitmap_bytes(k));
  fill_bits(out.ptr, k, [&](uint64_t i) { return get_bit(bits, idx[i]); });
  return out;
}

Col take_col(const Col& col, const uint32_t* idx, size_t k) {
  Col o = shaped_like(col, k);
  if (col.layout == Layout::Null) {
    o.null_count = int64_t(k);
    return o;
  }
  if (!col.validity.empty()) {
    o.validity = take_bits(col.validity.data(), idx, k);
    o.null_count = -1;
    normalize_validity(o);
  }
  switch (col.layout) {
    case Layout::Bool: o.values = take_bits(col.values.data(), idx, k); break;
    case Layout::Prim: {
      size_t w = size_t(ptype_width(col.ptype));
      o.values = alloc(k * w);
      with_uint_ptype(col.ptype, [&](auto t) {
        using T = decltype(t);
        const T* s = col.vals<T>();
        T* d = o.values.mut<T>();
        for (size_t i = 0; i < k; i++) d[i] = s[idx[i]];
      });
      break;
    }
    case Layout::Decimal: {
      size_t w = col.dec_width;
      o.values = alloc(k * w);
      for (size_t i = 0; i < k; i++) std::memcpy(o.values.ptr + i * w, col.values.data() + size_t(idx[i]) * w, w);
      break;
    }
    case Layout::String: {
      const int32_t* so = col.offsets.as<int32_t>();
      uint64_t total = 0;
      for (size_t i = 0; i < k; i++) total += uint64_t(so[idx[i] + 1] - so[idx[i]]);
      if (total > 0x7FFFFFFF) unsupported("a gather of more than 2 GiB of strings");
      o.offsets = alloc(4 * (k + 1));
      int32_t* oo = o.offsets.mut<int32_t>();
      oo[0] = 0;
      const uint8_t* src = col.values.data();
      // short values (dictionaries of symbols, codes, flags...): copy 16 bytes at a time
      // from a padded copy of the values, whatever their length
      uint64_t nvals = col.len;
      int32_t maxlen = 0;
      if (k > 64)
        for (uint64_t j = 0; j < nvals; j++) maxlen = std::max(maxlen, so[j + 1] - so[j]);
      if (k > 64 && maxlen <= 16 && nvals <= (uint64_t(1) << 20)) {
        size_t span = size_t(so[nvals] - so[0]);
        Buf padded = alloc(span + 16);
        if (span) std::memcpy(padded.ptr, src + so[0], span);  // (all empty: src may be null)
        std::memset(padded.ptr + span, 0, 16);
        const uint8_t* p = padded.data() - so[0];
        Buf out = alloc(size_t(total) + 16);
        uint8_t* d = out.ptr;
        int32_t pos = 0;
        for (size_t i = 0; i < k; i++) {
          int32_t a = so[idx[i]], len = so[idx[i] + 1] - a;
          std::memcpy(d + pos, p + a, 16);
          pos += len;
          oo[i + 1] = pos;
        }
        o.values = out.slice(0, size_t(total));
      } else {
        o.values = alloc(size_t(total));
        int32_t pos = 0;
        for (size_t i = 0; i < k; i++) {
          int32_t a = so[idx[i]], len = so[idx[i] + 1] - a;
          if (len) std::memcpy(o.values.ptr + pos, src + a, size_t(len));
          pos += len;
          oo[i + 1] = pos;
        }
      }
      break;
    }
    case Layout::View: {
      o.values = alloc(16 * k);
      for (size_t i = 0; i < k; i++) std::memcpy(o.values.ptr + 16 * i, col.values.data() + 16 * size_t(idx[i]), 16);
      o.data = col.data;
      break;
    }
    case Layout::Struct:
      for (auto& ch : col.children) o.children.push_back(take_col(ch, idx, k));
      break;
    case Layout::List: {
      const int32_t* so = col.offsets.as<int32_t>();
      std::vector<uint32_t> elems;
      o.offsets = alloc(4 * (k + 1));
      int32_t* oo = o.offsets.mut<int32_t>();
      oo[0] = 0;
      for (size_t i = 0; i < k; i++) {
        for (int32_t j = so[idx[i]]; j < so[idx[i] + 1]; j++) elems.push_back(uint32_t(j));
        oo[i + 1] = int32_t(elems.size());
      }
      o.children.push_back(take_col(col.children[0], elems.data(), elems.size()));
      break;
    }
    case Layout::FSL: {
      std::vector<uint32_t> elems;
      elems.reserve(k * col.fsl_size);
      for (size_t i = 0; i < k; i++)
        for (uint32_t j = 0; j < col.fsl_size; j++) elems.push_back(uint32_t(uint64_t(idx[i]) * col.fsl_size + j));
      o.children.push_back(take_col(col.children[0], elems.data(), elems.size()));
      break;
    }
    default: break;
  }
  return o;
}

Col take(const Node& n, const uint32_t* idx, size_t k, Ctx& c) {
  if (!n.enc) throw NeedPython();
  Col out;
  if (n.enc->take(n, idx, k, out, c)) return out;
  return take_col(decode(n, c), idx, k);
}

}  // namespace vx
