// vortex.dict: integer codes into a dictionary of values of any dtype (mirrors
// encodings/_dict.py). Predicates run on the values and map through the codes; decoding
// gathers the values (strings as 16-byte views when string_view output is asked for: no
// string bytes are copied).
#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "enc_util.h"

namespace vx {
namespace {

struct DictMeta : MetaBase {
  uint64_t values_len = 0;
  PType codes_ptype = PType::U8;
  std::optional<bool> is_nullable_codes;
};

// Codes in range (a code out of [0, bound) at a valid row is an error: checked_indices);
// `bad` positions under nulls read as 0.
template <class C>
bool codes_in_range(const C* codes, uint64_t n, uint64_t bound, const uint8_t* valid) {
  if (n == 0) return true;
  // min and max (vectorizable reductions), then the slow path only when a code is out
  C lo = codes[0], hi = codes[0];
  for (uint64_t i = 1; i < n; i++) {
    lo = codes[i] < lo ? codes[i] : lo;
    hi = codes[i] > hi ? codes[i] : hi;
  }
  if (i128(lo) >= 0 && i128(hi) < i128(bound)) return true;
  for (uint64_t i = 0; i < n; i++) {
    i128 x = i128(codes[i]);
    if ((x < 0 || x >= i128(bound)) && (!valid || get_bit(valid, i)))
      malformed("vortex.dict codes: a code falls outside the ", bound, " values");
  }
  return false;
}

// the code at i, or 0 where it is out of range (only under nulls, checked before)
template <class C>
inline uint64_t code_at(const C* codes, uint64_t i, uint64_t bound, bool all_in) {
  if (all_in) return uint64_t(codes[i]);
  i128 x = i128(codes[i]);
  return (x < 0 || x >= i128(bound)) ? 0 : uint64_t(x);
}

// Per-value bitmaps mapped to the rows through the codes, in one pass: oa[i] = a[codes[i]]
// and, when `b` is given, ob[i] = b[codes[i]] (codes checked as gather checks them; under a
// null an out-of-range code reads value 0). The values' bits go through a byte table (one
// load a row, no index vector).
void map_bits(const Col& codes, uint64_t nv, const uint8_t* a, const uint8_t* b, Buf& oa, Buf& ob) {
  const uint64_t n = codes.len;
  std::vector<uint8_t> lut(size_t(std::max<uint64_t>(nv, 1)), 0);
  for (uint64_t j = 0; j < nv; j++)
    lut[size_t(j)] = uint8_t(get_bit(a, j) | (b ? get_bit(b, j) << 1 : 0));
  const uint8_t* valid = codes.validity.empty() ? nullptr : codes.validity.data();
  oa = alloc_zeroed(bitmap_bytes(n));
  if (b) ob = alloc_zeroed(bitmap_bytes(n));
  with_int_ptype(codes.ptype, [&](auto t) {
    using C = decltype(t);
    const C* cd = codes.vals<C>();
    const bool all_in = codes_in_range<C>(cd, n, nv, valid);
    const uint8_t* L = lut.data();
    uint8_t* pa = oa.ptr;
    uint8_t* pb = b ? ob.ptr : nullptr;
    uint64_t i = 0;
    if (all_in && !pb) {  // one bitmap: a byte of 8 rows from 8 table loads
      for (; i + 8 <= n; i += 8) {
        unsigned x = 0;
        for (unsigned k = 0; k < 8; k++) x |= unsigned(L[size_t(cd[i + k])] & 1) << k;
        pa[i >> 3] = uint8_t(x);
      }
    } else if (all_in) {
      for (; i + 8 <= n; i += 8) {
        unsigned x = 0;
        for (unsigned k = 0; k < 8; k++) x |= unsigned(L[size_t(cd[i + k])]) << (2 * k);
        // even bits (a) and odd bits (b) of the 16 gathered into two bytes
        unsigned ea = x & 0x5555, eb = (x >> 1) & 0x5555;
        ea = (ea | (ea >> 1)) & 0x3333; ea = (ea | (ea >> 2)) & 0x0F0F; ea = (ea | (ea >> 4)) & 0x00FF;
        pa[i >> 3] = uint8_t(ea);
        if (pb) {
          eb = (eb | (eb >> 1)) & 0x3333; eb = (eb | (eb >> 2)) & 0x0F0F; eb = (eb | (eb >> 4)) & 0x00FF;
          pb[i >> 3] = uint8_t(eb);
        }
      }
    }
    for (; i < n; i++) {
      uint8_t l = L[size_t(code_at<C>(cd, i, nv, all_in))];
      if (l & 1) pa[i >> 3] = uint8_t(pa[i >> 3] | (1u << (i & 7)));
      if (pb && (l & 2)) pb[i >> 3] = uint8_t(pb[i >> 3] | (1u << (i & 7)));
    }
  });
}

// the codes checked (a code out of [0, bound) at a valid row is an error), nothing kept
void check_codes(const Col& codes, uint64_t bound) {
  const uint8_t* valid = codes.validity.empty() ? nullptr : codes.validity.data();
  with_int_ptype(codes.ptype, [&](auto t) {
    using C = decltype(t);
    codes_in_range<C>(codes.vals<C>(), codes.len, bound, valid);
  });
}

// values[codes] with the codes' validity combined in
Col gather(const Col& values, const Col& codes, const DType& d, Ctx& c) {
  const uint64_t k = codes.len;
  const uint64_t nv = values.len;
  const uint8_t* cvalid = codes.validity.empty() ? nullptr : codes.validity.data();
  Col out;
  with_int_ptype(codes.ptype, [&](auto ct) {
    using C = decltype(ct);
    const C* cd = codes.vals<C>();
    bool all_in = codes_in_range<C>(cd, k, nv, cvalid);
    auto code = [&](uint64_t i) { return code_at<C>(cd, i, nv, all_in); };
    // the views (16 bytes a row) of the codes, sharing the data buffers of `views`
    auto gather_views = [&](const Col& views) {
      out = views;
      out.len = k;
      out.values = alloc(size_t(16 * k));
      const uint8_t* vs = views.values.data();
      for (uint64_t i = 0; i < k; i++) std::memcpy(out.values.ptr + 16 * i, vs + 16 * code(i), 16);
    };
    switch (values.layout) {
      case Layout::Prim: {
        int w = ptype_width(values.ptype);
        out = prim_col(values.ptype, alloc(size_t(k) * size_t(w)), k);
        with_uint_ptype(values.ptype, [&](auto t) {
          using T = decltype(t);
          const T* s = values.vals<T>();
          T* o = out.values.mut<T>();
          if (all_in) {  // the common case: no per-row range check
            for (uint64_t i = 0; i < k; i++) o[i] = s[cd[i]];
          } else {
            for (uint64_t i = 0; i < k; i++) o[i] = s[code(i)];
          }
        });
        break;
      }
      case Layout::String: {
        const int32_t* so = values.offsets.as<int32_t>();
        if (c.string_view) {
          gather_views(to_views(values));
          break;
        }
        int32_t longest = 0;
        for (uint64_t j = 0; j < nv; j++) longest = std::max(longest, so[j + 1] - so[j]);
        // the bytes the gather writes: bounded by rows x the longest value, counted exactly
        // only when that bound could exceed the limits
        uint64_t total = sat_mul(k, uint64_t(longest));
        if (total > c.lim.max_decoded_bytes || total > 0x7FFFFFFF) {
          total = 0;
          for (uint64_t i = 0; i < k; i++) {
            uint64_t x = code(i);
            total += uint64_t(so[x + 1] - so[x]);
          }
          check_decoded(c.lim, total, cat("gather of ", k, " strings"));
          if (total > 0x7FFFFFFF) unsupported("a gather of more than 2 GiB of strings");
        }
        // (total is now the exact size or a bound of it: buffers are sized by it and cut
        // to the final offset)
        out.layout = Layout::String;
        out.len = k;
        out.offsets = alloc(size_t(4 * (k + 1)));
        int32_t* oo = out.offsets.mut<int32_t>();
        oo[0] = 0;
        int32_t maxlen = 0, minlen = INT32_MAX;
        const uint8_t* vvalid = values.validity.empty() ? nullptr : values.validity.data();
        for (uint64_t j = 0; j < nv; j++) {
          int32_t len = so[j + 1] - so[j];
          maxlen = std::max(maxlen, len);
          if (!vvalid || get_bit(vvalid, j)) minlen = std::min(minlen, len);
        }
        const uint8_t* src = values.values.data();
        int32_t fw = minlen;  // every valid value has this length: fixed-width rows
        bool fixed = nv > 0 && fw > 0 && fw <= 8 && minlen != INT32_MAX && uint64_t(fw) * k <= 0x7FFFFFFF;
        if (fixed)
          for (uint64_t j = 0; j < nv && fixed; j++)
            if ((!vvalid || get_bit(vvalid, j)) && so[j + 1] - so[j] != fw) fixed = false;
        if (fixed) {
          // flags, codes, tickers of one length: each value is one fixed-width item, null
          // values' slots zero (their rows are null), offsets i * W
          std::vector<uint64_t> items(size_t(nv), 0);
          for (uint64_t j = 0; j < nv; j++)
            if (!vvalid || get_bit(vvalid, j)) std::memcpy(&items[size_t(j)], src + so[j], size_t(fw));
          for (uint64_t i = 0; i <= k; i++) oo[i] = int32_t(i * uint64_t(fw));
          Buf data = alloc(size_t(k) * size_t(fw) + 8);
          uint8_t* dd = data.ptr;
          const uint64_t* it = items.data();
          auto typed = [&](auto t) {  // widths of a machine word: one store a row
            using T = decltype(t);
            std::vector<T> tab(static_cast<size_t>(nv));
            for (uint64_t j = 0; j < nv; j++) tab[size_t(j)] = T(it[j]);
            T* o = reinterpret_cast<T*>(dd);
            for (uint64_t i = 0; i < k; i++) std::memcpy(o + i, &tab[size_t(code(i))], sizeof(T));
          };
          switch (fw) {
            case 1: typed(uint8_t{}); break;
            case 2: typed(uint16_t{}); break;
            case 4: typed(uint32_t{}); break;
            case 8: typed(uint64_t{}); break;
            default:
              for (uint64_t i = 0; i < k; i++) std::memcpy(dd + i * uint64_t(fw), &it[code(i)], 8);
          }
          out.values = data.slice(0, size_t(k) * size_t(fw));
        } else if (maxlen <= 16) {
          // short values: copy 16 bytes a row from a padded copy, whatever their length
          size_t span = size_t(so[nv] - so[0]);
          Buf padded = alloc(span + 16);
          if (span) std::memcpy(padded.ptr, src + so[0], span);
          std::memset(padded.ptr + span, 0, 16);
          const uint8_t* p = padded.data() - so[0];
          Buf data = alloc(size_t(total) + 16);
          uint8_t* dd = data.ptr;
          int32_t pos = 0;
          for (uint64_t i = 0; i < k; i++) {
            uint64_t x = code(i);
            int32_t a = so[x];
            std::memcpy(dd + pos, p + a, 16);
            pos += so[x + 1] - a;
            oo[i + 1] = pos;
          }
          out.values = data.slice(0, size_t(pos));
        } else {
          Buf data = alloc(size_t(total));
          int32_t pos = 0;
          for (uint64_t i = 0; i < k; i++) {
            uint64_t x = code(i);
            int32_t a = so[x], len = so[x + 1] - a;
            if (len) std::memcpy(data.ptr + pos, src + a, size_t(len));
            pos += len;
            oo[i + 1] = pos;
          }
          out.values = data.slice(0, size_t(pos));
        }
        out.validity = values.validity.empty() ? Buf() : values.validity;  // gathered below
        break;
      }
      case Layout::View: {
        gather_views(values);
        break;
      }
      default: {
        std::vector<uint32_t> idx(static_cast<size_t>(k));
        for (uint64_t i = 0; i < k; i++) idx[size_t(i)] = uint32_t(code(i));
        out = take_col(values, idx.data(), size_t(k));
        return;  // (validity gathered by take_col)
      }
    }
    // validity: the values' (gathered) and the codes'
    Buf v;
    if (!values.validity.empty()) {
      const uint8_t* vv = values.validity.data();
      v = alloc_zeroed(bitmap_bytes(k));
      for (uint64_t i = 0; i < k; i++)
        if (get_bit(vv, code(i))) set_bit(v.ptr, i);
    }
    out.validity = v;
  });
  if (cvalid) {
    if (out.validity.empty()) {
      out.validity = bitmap_from(cvalid, 0, k);
    } else {
      uint8_t* o = out.validity.ptr;
      for (size_t i = 0; i < size_t((k + 7) >> 3); i++) o[i] &= cvalid[i];
    }
  }
  out.null_count = -1;
  normalize_validity(out);
  (void)d;
  return out;
}

// the codes a predicate on the vortex.dict node `n` unpacked for this scan (Ctx::keep), if
// it did
const Col* kept_codes(const Node& n) {
  return n.kept && n.kept->len == n.len ? n.kept.get() : nullptr;
}

class DictEnc : public Encoding {
 public:
  DictEnc() : Encoding("vortex.dict") {}
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "DictMetadata");
    DictMeta& m = make_meta<DictMeta>(n);
    m.values_len = f.get_uint(1, 0, 32);
    m.codes_ptype = int_ptype_of(f.get_uint(2, 0), "vortex.dict codes");
    m.is_nullable_codes = f.get_bool(3);
    (void)f.get_bool(4);
  }
  void child_specs(Node& n, Tree& t) const override {
    if (n.nchildren() != 2) malformed("vortex.dict takes 2 children (codes, values), got ", n.nchildren());
    const auto& m = n.m<DictMeta>();
    bool nullable_codes = m.is_nullable_codes.value_or(n.dtype->nullable);
    if (nullable_codes && !n.dtype->nullable)
      malformed("vortex.dict: nullable codes for a non-nullable ", dtype_repr(*n.dtype));
    (void)t;
    n.specs.push_back({prim(m.codes_ptype, nullable_codes), n.len});
    n.specs.push_back({n.dtype, m.values_len});
  }
  void validate(Node& n, Tree& t) const override {
    const auto& m = n.m<DictMeta>();
    if (m.values_len == 0 && n.len && !n.child(0).dtype->nullable)
      malformed("vortex.dict: ", n.len, " non-null codes into an empty dictionary");
    check_decoded(t.limits, sat_mul(n.len, estimate_width(*n.dtype)), cat("vortex.dict of ", n.len, " rows"));
  }

  static Col codes_of(const Node& n, Ctx& c) {
    Col codes = vx::decode(n.child(0), c);
    if (codes.layout != Layout::Prim || !ptype_is_int(codes.ptype))
      malformed("vortex.dict codes must be integers, not ", dtype_repr(*n.child(0).dtype));
    return codes;
  }

  static Col from_codes(const Node& n, const Col& codes, Ctx& c) {
    uint64_t k = codes.len;
    if (!codes.validity.empty() && count_ones(codes.validity.data(), k) == 0) {
      check_codes(codes, n.child(1).len);
      Scalar null;
      return repeat_scalar(null, *n.dtype, k, c);
    }
    Col values = vx::decode(n.child(1), c);
    if (values.len != n.child(1).len) malformed("vortex.dict values decoded to ", values.len, " rows");
    return gather(values, codes, *n.dtype, c);
  }

  Col decode(const Node& n, Ctx& c) const override {
    const Col* kept = kept_codes(n);
    return from_codes(n, kept ? *kept : codes_of(n, c), c);
  }

  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    const Col* kept = kept_codes(n);
    Col codes = kept ? take_col(*kept, idx, k) : vx::take(n.child(0), idx, k, c);
    if (codes.layout != Layout::Prim || !ptype_is_int(codes.ptype))
      malformed("vortex.dict codes must be integers, not ", dtype_repr(*n.child(0).dtype));
    out = from_codes(n, codes, c);
    return true;
  }

  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    const Node& values = n.child(1);
    Buf vv = values.dtype->nullable ? node_validity(values, c) : Buf();
    if (vv.empty()) {
      out = n.child(0).dtype->nullable ? node_validity(n.child(0), c) : Buf();
      return true;
    }
    Col codes = codes_of(n, c);
    Buf m, unused;
    map_bits(codes, values.len, vv.data(), nullptr, m, unused);
    m = and_bits(m, codes.validity, n.len);
    out = count_ones(m.data(), n.len) == n.len ? Buf() : m;
    return true;
  }

  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    const Node& v = n.child(1);
    return v.enc && v.len && v.enc->int_bounds(v, lo, hi, c);
  }

  // a per-value Mask mapped to the rows (_map)
  static Mask map(const Node& n, const Mask& hit, Ctx& c) {
    uint64_t nv = hit.len;
    uint64_t ones = count_ones(hit.vals.data(), nv);
    bool hit_all_valid = hit.valid.empty() || count_ones(hit.valid.data(), nv) == nv;
    if (hit_all_valid && (ones == 0 || ones == nv)) {
      Buf cv = n.child(0).dtype->nullable ? node_validity(n.child(0), c) : Buf();
      return mask_broadcast(n.len, ones != 0, cv);
    }
    const Col* kept = kept_codes(n);
    Col codes = kept ? *kept : codes_of(n, c);
    if (c.keep && !kept) n.kept = std::make_shared<const Col>(codes);  // (shares its buffers)
    Buf vals, hv;
    map_bits(codes, nv, hit.vals.data(), hit_all_valid ? nullptr : hit.valid.data(), vals, hv);
    // (hv is empty when every value's answer is valid)
    return with_validity(vals, and_bits(codes.validity, hv, n.len), n.len);
  }

  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    out = map(n, vx::compare(n.child(1), v, op, c), c);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    out = map(n, vx::is_in(n.child(1), v, c), c);
    return true;
  }
};
REGISTER_ENCODING(DictEnc);

}  // namespace
// -- dictionary output (scan(read_dictionary=...)) ------------------------------------------

namespace {
// a dictionary of one null value (where no row refers to a value: codes 0 must index one)
Col one_null_string() {
  Col v;
  v.layout = Layout::String;
  v.len = 1;
  v.offsets = alloc_zeroed(8);
  v.validity = alloc_zeroed(1);
  v.null_count = 1;
  return v;
}
}  // namespace

void decode_dictionary(const Node& n, const uint32_t* idx, size_t k, bool all, const DType& d,
                       Ctx& c, Col& codes_out, Col& values_out) {
  const uint64_t rows = all ? n.len : uint64_t(k);
  Buf out = alloc(size_t(4 * rows));
  int32_t* o = out.mut<int32_t>();
  Buf valid;
  if (n.enc && std::string_view(n.enc->id()) == "vortex.dict") {
    // the message's own dictionary: its codes (taken) and values, nothing gathered
    const Col* kept = kept_codes(n);
    Col codes = kept ? (all ? *kept : take_col(*kept, idx, k))
                     : all ? vx::decode(n.child(0), c) : vx::take(n.child(0), idx, k, c);
    if (codes.layout != Layout::Prim || !ptype_is_int(codes.ptype))
      malformed("vortex.dict codes must be integers, not ", dtype_repr(*n.child(0).dtype));
    if (codes.len != rows) malformed("vortex.dict codes decoded to ", codes.len, " rows");
    Col values = vx::decode(n.child(1), c);
    if (values.len != n.child(1).len) malformed("vortex.dict values decoded to ", values.len, " rows");
    conform(values, d, false);
    const uint64_t nv = values.len;
    if (nv > uint64_t(INT32_MAX)) unsupported("a dictionary of more than 2^31 values as Arrow");
    const uint8_t* cvalid = codes.validity.empty() ? nullptr : codes.validity.data();
    with_int_ptype(codes.ptype, [&](auto t) {
      using C = decltype(t);
      const C* cd = codes.vals<C>();
      const bool all_in = codes_in_range<C>(cd, rows, nv, cvalid);
      for (uint64_t i = 0; i < rows; i++) o[i] = int32_t(code_at<C>(cd, i, nv, all_in));
    });
    if (cvalid) valid = bitmap_from(cvalid, 0, rows);
    if (!values.validity.empty() && values.null_count != 0) {
      // a row whose value is null is a null row (the dictionary keeps its null entry)
      Buf vv, unused;
      map_bits(codes, nv, values.validity.data(), nullptr, vv, unused);
      valid = and_bits(valid, vv, rows);
    }
    values_out = std::move(values);
  } else {
    // any other encoding: decoded, its distinct values numbered in first-seen order
    Col col = all ? vx::decode(n, c) : vx::take(n, idx, k, c);
    conform(col, d, false);
    if (col.layout != Layout::String || col.len != rows)
      malformed("a string column decoded to ", col.len, " rows of another layout");
    const int32_t* so = col.offsets.as<int32_t>();
    const uint8_t* data = col.values.data();
    const uint8_t* cv = col.validity.empty() ? nullptr : col.validity.data();
    std::unordered_map<std::string_view, int32_t> seen;
    std::vector<int32_t> voff{0};
    std::vector<uint8_t> vdata;
    for (uint64_t i = 0; i < rows; i++) {
      if (cv && !get_bit(cv, i)) {
        o[i] = 0;
        continue;
      }
      std::string_view v(reinterpret_cast<const char*>(data) + so[i], size_t(so[i + 1] - so[i]));
      auto [it, fresh] = seen.emplace(v, int32_t(voff.size() - 1));
      if (fresh) {
        vdata.insert(vdata.end(), v.begin(), v.end());
        voff.push_back(int32_t(vdata.size()));
      }
      o[i] = it->second;
    }
    if (cv) valid = bitmap_from(cv, 0, rows);
    Col v;
    v.layout = Layout::String;
    v.len = voff.size() - 1;
    v.offsets = alloc(voff.size() * 4);
    std::memcpy(v.offsets.ptr, voff.data(), voff.size() * 4);
    v.values = alloc(vdata.size());
    if (!vdata.empty()) std::memcpy(v.values.ptr, vdata.data(), vdata.size());
    values_out = std::move(v);
  }
  if (values_out.len == 0 && rows > 0) values_out = one_null_string();
  codes_out = prim_col(PType::I32, std::move(out), rows, std::move(valid), -1);
  normalize_validity(codes_out);
}

}  // namespace vx
