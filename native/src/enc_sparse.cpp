// vortex.sparse: a fill value everywhere but at patched rows, of any dtype (mirrors
// encodings/_sparse.py). Predicates evaluate the fill once and the patch values on their
// own; take looks the rows up among the (sorted) patch positions.
#include "enc_ints.h"
#include "patches.h"

namespace vx {
namespace {

struct SparseMeta : MetaBase {
  PatchesMeta patches;
  Scalar fill;  // parsed in validate (sparse_fill_value)
};

// Positions indices - offset of the patches, checked sorted and inside [0, n)
// (strict_patch_positions).
std::vector<uint64_t> strict_positions(const Node& n, Ctx& c) {
  const PatchesMeta& pm = n.m<SparseMeta>().patches;
  std::vector<uint64_t> pos;
  if (pm.len == 0) return pos;
  Col idx = decode_ints(n.child(0), c, "vortex.sparse patch indices");
  ints::align_values(idx);
  pos.resize(size_t(idx.len));
  bool big = false;
  for_each_int(idx, [&](uint64_t i, auto v) {
    if constexpr (std::is_same_v<decltype(v), uint64_t>) big |= v >> 63;
    pos[size_t(i)] = uint64_t(v);
  });
  if (big) malformed("vortex.sparse: a patch index does not fit in 63 bits");
  // (the reference subtracts the offset in int64)
  if (pm.offset > uint64_t(INT64_MAX)) malformed("vortex.sparse: patch offset ", pm.offset, " is out of range");
  int64_t off = int64_t(pm.offset);
  for (size_t i = 1; i < pos.size(); i++)
    if (int64_t(pos[i]) < int64_t(pos[i - 1])) malformed("vortex.sparse: patch indices are not sorted");
  if (pos.empty()) return pos;
  int64_t first = int64_t(pos.front()) - off, last = int64_t(pos.back()) - off;
  if (first < 0 || uint64_t(last) >= n.len)
    malformed("vortex.sparse: patch at position ", first < 0 ? first : last, " is outside the ", n.len, " rows");
  for (auto& p : pos) p -= uint64_t(off);
  return pos;
}

// the column of n copies of the fill (strings as views: patches overlay them cheaply)
Col filled(const Node& n, uint64_t k, Ctx& c) {
  Ctx views(c.lim);
  views.string_view = true;
  return repeat_scalar(n.m<SparseMeta>().fill, *n.dtype, k, views);
}

class SparseEnc : public Encoding {
 public:
  SparseEnc() : Encoding("vortex.sparse") {}
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "SparseMetadata");
    auto pf = proto::get_message(f, 1, "SparseMetadata.patches");
    if (!pf) malformed("vortex.sparse: SparseMetadata has no patches");
    PatchesMeta pm = PatchesMeta::from_fields(*pf, "vortex.sparse");
    if (!ptype_is_unsigned(pm.indices_ptype))
      malformed("vortex.sparse: patch indices must be unsigned, not ", ptype_name(pm.indices_ptype));
    if (pm.len > n.len) malformed("vortex.sparse: ", pm.len, " patches for ", n.len, " rows");
    make_meta<SparseMeta>(n).patches = pm;
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override {
    if (n.nchildren() != 2) malformed("vortex.sparse takes 2 children (indices, values), got ", n.nchildren());
    const PatchesMeta& pm = n.m<SparseMeta>().patches;
    n.specs.push_back({prim(pm.indices_ptype, false), pm.len});
    n.specs.push_back({n.dtype, pm.len});
  }
  void validate(Node& n, Tree& t) const override {
    auto& m = static_cast<SparseMeta&>(*n.meta);
    const Buf& raw = n.buffers[0];
    if (raw.len == 0) {
      if (!n.dtype->nullable) malformed("vortex.sparse: empty fill value for a non-nullable dtype");
      m.fill = Scalar();
    } else {
      m.fill = value_from_proto(*n.dtype, raw.bytes());
    }
    // the fill is repeated on every row that is not a patch: count its bytes too
    uint64_t width = estimate_width(*n.dtype);
    if (!m.fill.null && n.dtype->storage().is_string_like()) width = sat_add(width, m.fill.bytes.size());
    check_decoded(t.limits, sat_mul(n.len, width), cat("vortex.sparse of ", n.len, " rows"));
  }

  Col decode(const Node& n, Ctx& c) const override {
    std::vector<uint64_t> pos = strict_positions(n, c);
    Col values = vx::decode(n.child(1), c);
    ints::align_values(values);
    Col out = filled(n, n.len, c);
    if (!pos.empty()) ints::overlay(out, values, pos.data(), pos.size());
    return out;
  }

  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    bool fill_ok = !n.m<SparseMeta>().fill.null;
    Buf pv = node_validity(n.child(1), c);
    out = Buf();
    if (fill_ok && pv.empty()) return true;
    std::vector<uint64_t> pos = strict_positions(n, c);
    Buf v = bitmap_alloc(n.len, fill_ok);
    for (size_t i = 0; i < pos.size(); i++) {
      if (pv.empty() || get_bit(pv.data(), i)) set_bit(v.ptr, pos[i]);
      else clear_bit(v.ptr, pos[i]);
    }
    if (count_ones(v.data(), n.len) != n.len) out = v;
    return true;
  }

  // the fill's value (0 under a null fill, as decoded) and the patch values' bounds
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    const Scalar& f = n.m<SparseMeta>().fill;
    const DType& s = n.dtype->storage();
    if (s.kind != Kind::Primitive || !ptype_is_int(s.ptype)) return false;
    lo = hi = f.null ? 0 : f.i;
    const Node& v = n.child(1);
    if (v.len == 0) return true;
    i128 a, b;
    if (!v.enc || !v.enc->int_bounds(v, a, b, c)) return false;
    lo = std::min(lo, a);
    hi = std::max(hi, b);
    return true;
  }

  // rows get the fill's (one-row) answer, patched rows their own (_combine)
  static Mask combine(const Node& n, const Mask& fill_res, const Mask& patch_res, Ctx& c) {
    uint64_t len = n.len;
    bool fill_ok = fill_res.valid.empty() || get_bit(fill_res.valid.data(), 0);
    bool fv = get_bit(fill_res.vals.data(), 0) && fill_ok;
    std::vector<uint64_t> pos = strict_positions(n, c);
    Mask m;
    m.len = len;
    m.vals = bitmap_alloc(len, fv);
    const uint8_t* pv = patch_res.vals.data();
    for (size_t i = 0; i < pos.size(); i++) {
      if (get_bit(pv, i)) set_bit(m.vals.ptr, pos[i]);
      else clear_bit(m.vals.ptr, pos[i]);
    }
    if (fill_ok && patch_res.valid.empty()) return m;
    m.valid = bitmap_alloc(len, fill_ok);
    const uint8_t* pok = patch_res.valid.empty() ? nullptr : patch_res.valid.data();
    for (size_t i = 0; i < pos.size(); i++) {
      if (!pok || get_bit(pok, i)) set_bit(m.valid.ptr, pos[i]);
      else clear_bit(m.valid.ptr, pos[i]);
    }
    return m;
  }

  static Col fill_one(const Node& n, Ctx& c) { return repeat_scalar(n.m<SparseMeta>().fill, *n.dtype, 1, c); }

  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    Mask f = compare_col(fill_one(n, c), n.dtype->storage(), v, op);
    out = combine(n, f, vx::compare(n.child(1), v, op, c), c);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    Mask f = is_in_col(fill_one(n, c), n.dtype->storage(), v);
    out = combine(n, f, vx::is_in(n.child(1), v, c), c);
    return true;
  }

  // patch lookup of the sorted rows (patch_hits): the fill, with the hit patches taken
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    std::vector<uint64_t> pos = strict_positions(n, c);
    std::vector<uint64_t> at;  // places in idx that are patched
    std::vector<uint32_t> sel; // the patch each takes
    patch_hits(pos.data(), pos.size(), idx, k, at, sel);
    out = filled(n, k, c);
    if (!at.empty()) {
      Col taken = vx::take(n.child(1), sel.data(), sel.size(), c);
      ints::align_values(taken);
      ints::overlay(out, taken, at.data(), at.size());
    }
    return true;
  }
};
REGISTER_ENCODING(SparseEnc);

}  // namespace
}  // namespace vx
