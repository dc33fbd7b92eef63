// vortex.datetimeparts: timestamps split into days, seconds of the day and subseconds
// (mirrors encodings/_datetimeparts.py). Decodes to i64 `days * 86400 * D + seconds * D +
// subseconds` in wrapping arithmetic (D ticks per second); comparisons are answered from the
// days part and the parts' bounds, reading the other parts only near the literal's day.
#include <algorithm>

#include "enc_util.h"

namespace vx {
namespace {

constexpr int64_t kSecondsPerDay = 86400;

struct DtpMeta : MetaBase {
  PType days = PType::U8, seconds = PType::U8, subseconds = PType::U8;
};

const char* const kPartNames[3] = {"vortex.datetimeparts days", "vortex.datetimeparts seconds",
                                   "vortex.datetimeparts subseconds"};

// ticks per second of the timestamp dtype (_ticks)
int64_t ticks_of(const DType& d) {
  if (d.kind != Kind::Extension || d.ext != ExtKind::Timestamp)
    malformed("vortex.datetimeparts holds timestamps, not ", dtype_repr(d));
  if (d.ext_meta.empty()) unsupported("extension ", d.ext_id, " has no time unit");
  uint8_t u = uint8_t(d.ext_meta[0]);
  switch (u) {
    case kUnitNs: return 1000000000;
    case kUnitUs: return 1000000;
    case kUnitMs: return 1000;
    case kUnitS: return 1;
    case kUnitD: malformed("vortex.datetimeparts cannot hold a timestamp in D");
    default: malformed("extension ", d.ext_id, " has an unknown time unit ", int(u));
  }
}

template <class T>
inline uint64_t as_u64(T v) {
  if constexpr (std::is_signed_v<T>) return uint64_t(int64_t(v));
  else return uint64_t(v);
}

// seconds or subseconds: a (non-null) integer constant, or decoded integers (_part)
struct Part {
  bool scalar = false;
  uint64_t value = 0;  // the constant wrapped to 64 bits
  Col col;
};

bool constant_int(const Node& ch, Ctx& c, uint64_t* v) {
  i128 lo, hi;
  if (!ch.enc || std::string_view(ch.enc->id()) != "vortex.constant" || !ch.dtype->is_int()) return false;
  if (!ch.enc->int_bounds(ch, lo, hi, c)) return false;  // (a null constant)
  *v = uint64_t(u128(lo));
  return true;
}

Part part_of(const Node& ch, uint64_t n, int which, Ctx& c) {
  Part p;
  if (constant_int(ch, c, &p.value)) {
    if (ch.len != n) malformed("vortex.datetimeparts children do not match the array length");
    p.scalar = true;
    return p;
  }
  p.col = decode_ints(ch, c, kPartNames[which]);
  if (p.col.len != n) malformed("vortex.datetimeparts children do not match the array length");
  return p;
}

// out[i] (op)= x[start + i] * mul for i < n, wrapping
template <bool Add>
void scaled(const Col& x, uint64_t start, uint64_t n, uint64_t mul, uint64_t* out) {
  with_int_ptype(x.ptype, [&](auto t) {
    using T = decltype(t);
    const T* v = x.vals<T>() + start;
    if (Add) {
      if (mul == 1)
        for (uint64_t i = 0; i < n; i++) out[i] += as_u64(v[i]);
      else
        for (uint64_t i = 0; i < n; i++) out[i] += as_u64(v[i]) * mul;
    } else {
      for (uint64_t i = 0; i < n; i++) out[i] = as_u64(v[i]) * mul;
    }
  });
}

// days * per_day + secs * D + subs (the canonicalize arithmetic) into out[0, n), a block of
// rows at a time (the partial sums stay in cache)
void combine_into(const Col& days, const Part& secs, const Part& subs, int64_t d, uint64_t n, uint64_t* o) {
  constexpr uint64_t kBlock = 2048;
  const uint64_t sadd = secs.scalar ? secs.value * uint64_t(d) : 0;
  const uint64_t uadd = subs.scalar ? subs.value : 0;
  for (uint64_t at = 0; at < n; at += kBlock) {
    uint64_t k = std::min(kBlock, n - at);
    uint64_t* ob = o + at;
    scaled<false>(days, at, k, uint64_t(kSecondsPerDay * d), ob);
    if (!secs.scalar) scaled<true>(secs.col, at, k, uint64_t(d), ob);
    if (!subs.scalar) scaled<true>(subs.col, at, k, 1, ob);
    if (sadd + uadd)
      for (uint64_t i = 0; i < k; i++) ob[i] += sadd + uadd;
  }
}

// the decoded column: i64 values, validity from the days
Col combine(const Col& days, const Part& secs, const Part& subs, int64_t d, uint64_t n) {
  Buf out = alloc(size_t(8 * n));
  combine_into(days, secs, subs, d, n, out.mut<uint64_t>());
  Col r = prim_col(PType::I64, out, n, days.validity);
  r.null_count = -1;
  normalize_validity(r);
  return r;
}

// floor(x / y) for y > 0
inline i128 floor_div(i128 x, i128 y) {
  i128 q = x / y;
  if (x % y != 0 && x < 0) q -= 1;
  return q;
}

class DateTimePartsEnc : public Encoding {
 public:
  DateTimePartsEnc() : Encoding("vortex.datetimeparts") {}
  void check_dtype(const DType& d) const override {
    ticks_of(d);
    const DType& s = *d.children[0];
    if (s.kind != Kind::Primitive || s.ptype != PType::I64)
      malformed("vortex.datetimeparts needs i64 timestamp storage, not ", dtype_repr(s));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "DateTimePartsMetadata");
    DtpMeta& m = make_meta<DtpMeta>(n);
    m.days = int_ptype_of(f.get_uint(1, 0), "vortex.datetimeparts days");
    m.seconds = int_ptype_of(f.get_uint(2, 0), "vortex.datetimeparts seconds");
    m.subseconds = int_ptype_of(f.get_uint(3, 0), "vortex.datetimeparts subseconds");
  }
  void child_specs(Node& n, Tree&) const override {
    if (n.nchildren() != 3) malformed("vortex.datetimeparts takes 3 children, got ", n.nchildren());
    const DtpMeta& m = n.m<DtpMeta>();
    n.specs.push_back({prim(m.days, n.dtype->nullable), n.len});
    n.specs.push_back({prim(m.seconds, false), n.len});
    n.specs.push_back({prim(m.subseconds, false), n.len});
  }

  static Col days_of(const Node& n, Col days) {
    if (days.layout != Layout::Prim || !ptype_is_int(days.ptype))
      malformed("vortex.datetimeparts days must be integers, not ", dtype_repr(*n.child(0).dtype));
    return days;
  }

  Col decode(const Node& n, Ctx& c) const override {
    int64_t d = ticks_of(*n.dtype);
    Col days = days_of(n, vx::decode(n.child(0), c));
    Part secs = part_of(n.child(1), n.len, 1, c);
    Part subs = part_of(n.child(2), n.len, 2, c);
    if (days.len != n.len) malformed("vortex.datetimeparts children do not match the array length");
    return combine(days, secs, subs, d, n.len);
  }

  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = node_validity(n.child(0), c);
    return true;
  }

  // each part taken (constant parts stay scalars)
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    int64_t d = ticks_of(*n.dtype);
    Col days = days_of(n, vx::take(n.child(0), idx, k, c));
    if (days.len != k) malformed("vortex.datetimeparts days: a take gave ", days.len, " rows for ", k);
    Part parts[2];
    for (int j = 0; j < 2; j++) {
      const Node& ch = n.child(size_t(j) + 1);
      if (constant_int(ch, c, &parts[j].value)) {
        parts[j].scalar = true;
        continue;
      }
      parts[j].col = vx::take(ch, idx, k, c);
      check_ints(parts[j].col, kPartNames[j + 1], *ch.dtype);
      if (parts[j].col.len != k) malformed(kPartNames[j + 1], ": a take gave ", parts[j].col.len, " rows for ", k);
    }
    out = combine(days, parts[0], parts[1], d, k);
    return true;
  }

  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    if (v.kind != Lit::Int) return false;
    i128 lo[3], hi[3];
    for (size_t j = 0; j < 3; j++) {
      const Node& ch = n.child(j);
      if (!ch.enc || ch.len == 0 || !ch.enc->int_bounds(ch, lo[j], hi[j], c)) return false;
    }
    const int64_t d = ticks_of(*n.dtype);
    const i128 per_day = i128(kSecondsPerDay) * d;
    const i128 tlo = lo[1] * d + lo[2], thi = hi[1] * d + hi[2];
    const i128 lim = i128(1) << 63;
    if (!(-lim <= lo[0] * per_day + tlo && hi[0] * per_day + thi < lim)) return false;  // could wrap
    const uint64_t len = n.len;
    const i128 value = v.i;
    const Node& days = n.child(0);
    // day < a: every value is below the literal; day > b: every value is above it
    i128 a = -floor_div(thi - value, per_day), b = floor_div(value - tlo, per_day);
    Mask below = vx::compare(days, Lit::of_int(a), Op::Lt, c);
    Mask above = vx::compare(days, Lit::of_int(b), Op::Gt, c);
    const size_t nb = size_t((len + 7) >> 3);
    Mask rest;
    rest.len = len;
    rest.vals = alloc_zeroed(bitmap_bytes(len));
    const uint8_t* bl = below.vals.data();
    const uint8_t* ab = above.vals.data();
    const uint8_t* ok = below.valid.empty() ? nullptr : below.valid.data();
    for (size_t i = 0; i < nb; i++) {
      uint8_t r = uint8_t(~(bl[i] | ab[i]));
      rest.vals.ptr[i] = ok ? uint8_t(r & ok[i]) : r;
    }
    bitmap_clear_tail(rest.vals.ptr, len);
    uint64_t left = count_ones(rest.vals.data(), len);
    if (2 * left > len) return false;  // most rows undecided: decode instead
    Buf res = alloc_zeroed(bitmap_bytes(len));
    bool lt = op == Op::Lt || op == Op::Lte || op == Op::Neq;
    bool gt = op == Op::Gt || op == Op::Gte || op == Op::Neq;
    for (size_t i = 0; i < nb; i++)
      res.ptr[i] = uint8_t((lt ? bl[i] : 0) | (gt ? ab[i] : 0));
    if (left) {
      Positions rows = mask_positions(rest);
      Col parts[3];
      for (size_t j = 0; j < 3; j++) {
        parts[j] = vx::take(n.child(j), rows.data(), rows.size(), c);
        check_ints(parts[j], kPartNames[j], *n.child(j).dtype);
        if (parts[j].len != rows.size()) malformed(kPartNames[j], ": a take gave ", parts[j].len, " rows");
      }
      const size_t k = rows.size();
      Buf tb = alloc(8 * k);
      uint64_t* t = tb.mut<uint64_t>();
      Part secs, subs;
      secs.col = parts[1];
      subs.col = parts[2];
      combine_into(parts[0], secs, subs, d, k, t);
      const int64_t lit = int64_t(value);
      for (size_t i = 0; i < k; i++)
        if (op_holds(int64_t(t[i]), lit, op)) set_bit(res.ptr, rows[i]);
    }
    bitmap_clear_tail(res.ptr, len);
    out = with_validity(res, below.valid, len);
    return true;
  }
};
REGISTER_ENCODING(DateTimePartsEnc);

}  // namespace
}  // namespace vx
