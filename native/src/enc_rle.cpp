// fastlanes.rle: run-length encoding within 1024-value chunks (mirrors encodings/_rle.py).
// Chunk c of the decoded values is values[o[c] - o[0] + indices[c * 1024 : (c + 1) * 1024]].
#include "enc_ints.h"

namespace vx {
namespace {

struct RleMeta : MetaBase {
  uint64_t values_len = 0, indices_len = 0, offsets_len = 0, offset = 0;
  PType indices_ptype = PType::U8, offsets_ptype = PType::U8;
};

// One chunk: out[j] = vals[idx[j]] for the chunk's rows [a, b) (0 <= a <= b <= 1024), after
// checking every index of the chunk against its `top` (nulls clamped into [0, top]).
template <class T, class I>
void chunk(const T* vals, const I* idx, const uint8_t* valid, uint64_t vbase, uint64_t top, size_t a, size_t b,
           T* out, bool* bad) {
  // (indices are read as int64, as the reference does: u64 indices >= 2^63 are negative)
  I mx = 0;
  bool neg = false;
  for (size_t j = 0; j < 1024; j++) {
    mx = idx[j] > mx ? idx[j] : mx;
    if constexpr (sizeof(I) == 8) neg |= int64_t(idx[j]) < 0;
  }
  if (!neg && uint64_t(mx) <= top) {  // every index in range (nulls' too: clamping changes nothing)
    for (size_t j = a; j < b; j++) out[j - a] = vals[idx[j]];
    return;
  }
  if (!valid) {
    *bad = true;
    return;
  }
  for (size_t j = 0; j < 1024; j++) {
    int64_t x = int64_t(idx[j]);
    if (!get_bit(valid, vbase + j)) x = x < 0 ? 0 : (uint64_t(x) > top ? int64_t(top) : x);
    if (x < 0 || uint64_t(x) > top) {
      *bad = true;
      return;
    }
    if (j >= a && j < b) out[j - a] = vals[x];
  }
}

class RleEnc : public Encoding {
 public:
  RleEnc() : Encoding("fastlanes.rle") {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Primitive) malformed("fastlanes.rle cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "RLEMetadata");
    PType ip = int_ptype_of(f.get_uint(3, 0), "fastlanes.rle indices");
    PType op = int_ptype_of(f.get_uint(5, 0), "fastlanes.rle values_idx_offsets");
    if (!ptype_is_unsigned(ip) || !ptype_is_unsigned(op))
      malformed("fastlanes.rle: indices and offsets must be unsigned");
    uint64_t off = f.get_uint(6, 0);
    if (off >= 1024) malformed("fastlanes.rle: offset ", off, " is not < 1024");
    RleMeta& m = make_meta<RleMeta>(n);
    m.values_len = f.get_uint(1, 0);
    m.indices_len = f.get_uint(2, 0);
    m.offsets_len = f.get_uint(4, 0);
    m.indices_ptype = ip;
    m.offsets_ptype = op;
    m.offset = off;
    if (m.indices_len % 1024) malformed("fastlanes.rle: ", m.indices_len, " indices is not a multiple of 1024");
    if (sat_add(m.offset, n.len) > m.indices_len)
      malformed("fastlanes.rle: offset ", m.offset, " + ", n.len, " rows exceed ", m.indices_len, " indices");
    uint64_t nchunks = (m.offset + n.len + 1023) / 1024;
    if (m.offsets_len < nchunks)
      malformed("fastlanes.rle: ", m.offsets_len, " chunk offsets for ", nchunks, " chunks");
  }
  void child_specs(Node& n, Tree&) const override {
    if (n.nchildren() != 3) malformed("fastlanes.rle takes 3 children, got ", n.nchildren());
    const auto& m = n.m<RleMeta>();
    n.specs.push_back({prim(n.dtype->ptype, false), m.values_len});
    n.specs.push_back({prim(m.indices_ptype, n.dtype->nullable), m.indices_len});
    n.specs.push_back({prim(m.offsets_ptype, false), m.offsets_len});
  }
  void validate(Node& n, Tree& t) const override {
    const auto& m = n.m<RleMeta>();
    uint64_t nchunks = (m.offset + n.len + 1023) / 1024;
    check_decoded(t.limits, sat_mul(nchunks * 1024, uint64_t(ptype_width(n.dtype->ptype))),
                  cat("fastlanes.rle of ", n.len, " rows"));
  }

  Col decode(const Node& n, Ctx& c) const override {
    const auto& m = n.m<RleMeta>();
    PType p = n.dtype->ptype;
    uint64_t len = n.len;
    uint64_t nchunks = (m.offset + len + 1023) / 1024;
    Col vc = vx::decode(n.child(0), c);
    if (vc.layout != Layout::Prim || vc.ptype != p)
      malformed("fastlanes.rle: values decoded to ", vc.layout == Layout::Prim ? ptype_name(vc.ptype) : "a non-primitive column");
    Col offs = decode_ints(n.child(2), c, "fastlanes.rle values_idx_offsets");
    Col ic = vx::decode(n.child(1), c);
    if (ic.layout != Layout::Prim || !ptype_is_unsigned(ic.ptype))
      malformed("fastlanes.rle: indices decoded to ", ic.layout == Layout::Prim ? ptype_name(ic.ptype) : "a non-primitive column");
    ints::align_values(vc);
    ints::align_values(offs);
    ints::align_values(ic);
    Col out = prim_col(p, alloc(size_t(len) * size_t(ptype_width(p))), len);
    if (!ic.validity.empty()) {
      out.validity = bitmap_from(ic.validity.data(), m.offset, len);
      out.null_count = -1;
      normalize_validity(out);
    }
    if (nchunks == 0) return out;
    if (offs.len < nchunks || ic.len < nchunks * 1024)
      malformed("fastlanes.rle: ", offs.len, " chunk offsets and ", ic.len, " indices for ", nchunks, " chunks");
    // each chunk's runs: [starts[c], starts[c + 1]) of the values, relative to the first offset
    std::vector<int64_t> starts(size_t(nchunks) + 1);
    with_int_ptype(offs.ptype, [&](auto t) {
      using O = decltype(t);
      const O* o = offs.vals<O>();
      uint64_t o0 = uint64_t(o[0]);
      for (uint64_t k = 0; k < nchunks; k++) starts[size_t(k)] = int64_t(uint64_t(o[k]) - o0);  // (wrapping)
    });
    starts[size_t(nchunks)] = int64_t(vc.len);
    bool fits = true;
    for (uint64_t k = 0; k < nchunks; k++) fits &= starts[size_t(k)] >= 0;
    for (uint64_t k = 0; k < nchunks && fits; k++) fits &= starts[size_t(k + 1)] - starts[size_t(k)] >= 1;
    if (!fits) malformed("fastlanes.rle: chunk offsets do not fit the values");
    const uint8_t* valid = ic.validity.empty() ? nullptr : ic.validity.data();
    bool bad = false;
    with_uint_ptype(p, [&](auto t) {
      using T = decltype(t);
      const T* vals = vc.vals<T>();
      T* o = out.values.mut<T>();
      with_uint_ptype(ic.ptype, [&](auto it) {
        using I = decltype(it);
        const I* idx = ic.vals<I>();
        for (uint64_t k = 0; k < nchunks && !bad; k++) {
          // this chunk's output rows, [a, b) within it
          uint64_t first = k * 1024, lo = std::max(first, m.offset), hi = std::min(first + 1024, m.offset + len);
          size_t a = size_t(lo - first), b = size_t(hi - first);
          T* dst = o + (lo - m.offset);
          const T* base = vals + starts[size_t(k)];
          uint64_t runs = uint64_t(starts[size_t(k + 1)] - starts[size_t(k)]);
          if (runs == 1) {  // a single run ignores its indices
            for (size_t j = a; j < b; j++) dst[j - a] = base[0];
            continue;
          }
          chunk<T, I>(base, idx + first, valid, first, runs - 1, a, b, dst, &bad);
        }
      });
    });
    if (bad) malformed("fastlanes.rle: an index is past its chunk's runs");
    return out;
  }

  // every row holds one of the values (rows under nulls too: their indices are clamped)
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    const Node& v = n.child(0);
    return n.dtype->is_int() && v.enc && v.len && v.enc->int_bounds(v, lo, hi, c);
  }

  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    const auto& m = n.m<RleMeta>();
    Buf v = node_validity(n.child(1), c);
    out = Buf();
    if (v.empty()) return true;
    Buf s = bitmap_from(v.data(), m.offset, n.len);
    if (count_ones(s.data(), n.len) != n.len) out = s;
    return true;
  }
};
REGISTER_ENCODING(RleEnc);

}  // namespace
}  // namespace vx
