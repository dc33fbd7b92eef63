// The canonical encodings: vortex.null, bool, primitive, decimal, struct, ext, varbin,
// varbinview (the decode targets; their buffers go to Arrow as they are where the layouts
// agree). Mirrors vortex_io/encodings/{null,bool_,primitive,decimal,struct_,ext,varbin,
// varbinview}.py.
#include "enc_util.h"

namespace vx {
namespace {


// -- vortex.null ------------------------------------------------------------------------------
class NullEnc : public Encoding {
 public:
  NullEnc() : Encoding("vortex.null", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Null) malformed("vortex.null cannot hold ", dtype_repr(d));
  }
  Col decode(const Node& n, Ctx&) const override {
    Col c;
    c.layout = Layout::Null;
    c.len = n.len;
    c.null_count = int64_t(n.len);
    return c;
  }
  bool validity(const Node& n, Buf& out, Ctx&) const override {
    out = bitmap_alloc(n.len, false);
    return true;
  }
};
REGISTER_ENCODING(NullEnc);

// -- vortex.bool ------------------------------------------------------------------------------
struct BoolMeta : MetaBase {
  uint32_t offset = 0;
};

class BoolEnc : public ChildValidityEncoding<0> {
 public:
  BoolEnc() : ChildValidityEncoding("vortex.bool", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Bool) malformed("vortex.bool cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "BoolMetadata");
    uint64_t off = f.get_uint(1, 0, 32);
    if (off >= 8) malformed("vortex.bool bit offset ", off, " is not below 8");
    make_meta<BoolMeta>(n).offset = uint32_t(off);
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override { validity_spec(n, 0, n.specs); }
  void validate(Node& n, Tree&) const override {
    uint64_t need = (n.m<BoolMeta>().offset + n.len + 7) >> 3;
    if (n.buffers[0].len < need)
      malformed("vortex.bool buffer of ", n.buffers[0].len, " bytes holds fewer than ", n.len, " bits");
  }
  Col decode(const Node& n, Ctx& c) const override {
    Col out;
    out.layout = Layout::Bool;
    out.len = n.len;
    uint32_t off = n.m<BoolMeta>().offset;
    const Buf& b = n.buffers[0];
    if (off == 0) out.values = b.slice(0, size_t((n.len + 7) >> 3));
    else out.values = bitmap_from(b.data(), off, n.len);
    return with_own_validity(std::move(out), n, c);
  }
};
REGISTER_ENCODING(BoolEnc);

// -- vortex.primitive -------------------------------------------------------------------------
class PrimitiveEnc : public ChildValidityEncoding<0> {
 public:
  PrimitiveEnc() : ChildValidityEncoding("vortex.primitive", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Primitive) malformed("vortex.primitive cannot hold ", dtype_repr(d));
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override { validity_spec(n, 0, n.specs); }
  void validate(Node& n, Tree&) const override {
    uint64_t need = sat_mul(n.len, uint64_t(ptype_width(n.dtype->ptype)));
    if (n.buffers[0].len != need)
      malformed("vortex.primitive buffer is ", n.buffers[0].len, " bytes, ", n.len, " x ",
                ptype_name(n.dtype->ptype), " needs ", need);
  }
  Col decode(const Node& n, Ctx& c) const override {
    Col out = prim_col(n.dtype->ptype, aligned_to(n.buffers[0], size_t(ptype_width(n.dtype->ptype))), n.len);
    return with_own_validity(std::move(out), n, c);
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    Col full = prim_col(n.dtype->ptype, aligned_to(n.buffers[0], size_t(ptype_width(n.dtype->ptype))), n.len);
    full.validity = decode_validity(opt_child(n, 0), n.len, c);
    full.null_count = full.validity.empty() ? 0 : -1;
    out = take_col(full, idx, k);
    return true;
  }
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx&) const override {
    if (!ptype_is_int(n.dtype->ptype) || n.len == 0) return false;
    with_int_ptype(n.dtype->ptype, [&](auto t) {
      using T = decltype(t);
      Buf vals = aligned_to(n.buffers[0], sizeof(T));
      const T* v = vals.as<T>();
      T a = v[0], b = v[0];
      for (uint64_t i = 1; i < n.len; i++) {
        a = v[i] < a ? v[i] : a;
        b = v[i] > b ? v[i] : b;
      }
      lo = i128(a);
      hi = i128(b);
    });
    return true;
  }
};
REGISTER_ENCODING(PrimitiveEnc);

// -- vortex.decimal ---------------------------------------------------------------------------
struct DecimalMeta : MetaBase {
  int width = 16;
};

class DecimalEnc : public ChildValidityEncoding<0> {
 public:
  DecimalEnc() : ChildValidityEncoding("vortex.decimal", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Decimal) malformed("vortex.decimal cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    uint64_t t = proto::parse(n.metadata, "DecimalMetadata").get_uint(1, 0);
    static const int widths[] = {1, 2, 4, 8, 16, 32};
    if (t > 5) malformed("vortex.decimal: unknown values type ", t);
    make_meta<DecimalMeta>(n).width = widths[t];
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override { validity_spec(n, 0, n.specs); }
  void validate(Node& n, Tree&) const override {
    uint64_t need = sat_mul(n.len, uint64_t(n.m<DecimalMeta>().width));
    if (n.buffers[0].len != need)
      malformed("vortex.decimal buffer is ", n.buffers[0].len, " bytes, needs ", need);
  }
  Col decode(const Node& n, Ctx& c) const override {
    int w = n.m<DecimalMeta>().width;
    int tw = n.dtype->precision <= 38 ? 16 : 32;
    Col out;
    out.layout = Layout::Decimal;
    out.dec_width = uint8_t(tw);
    out.len = n.len;
    const uint8_t* src = n.buffers[0].data();
    if (w == tw) {
      out.values = aligned_to(n.buffers[0], 16);
    } else {
      out.values = alloc(size_t(n.len) * size_t(tw));
      uint8_t* dst = out.values.ptr;
      for (uint64_t i = 0; i < n.len; i++) {
        const uint8_t* s = src + i * size_t(w);
        uint8_t* d = dst + i * size_t(tw);
        int cw = w < tw ? w : tw;
        std::memcpy(d, s, size_t(cw));
        uint8_t fillb = (s[w - 1] & 0x80) ? 0xFF : 0x00;
        if (tw > cw) std::memset(d + cw, fillb, size_t(tw - cw));
      }
    }
    return with_own_validity(std::move(out), n, c);
  }
};
REGISTER_ENCODING(DecimalEnc);

// -- vortex.struct ----------------------------------------------------------------------------
class StructEnc : public Encoding {
 public:
  StructEnc() : Encoding("vortex.struct", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Struct) malformed("vortex.struct cannot hold ", dtype_repr(d));
  }
  void child_specs(Node& n, Tree&) const override {
    size_t nf = n.dtype->children.size();
    size_t k = n.nchildren();
    if (k == nf + 1) {
      if (!n.dtype->nullable) malformed("vortex.struct: validity child on a non-nullable struct");
      n.specs.push_back({bool_dtype(false), n.len});
    } else if (k != nf) {
      malformed("vortex.struct has ", k, " children for ", nf, " fields");
    }
    for (auto* d : n.dtype->children) n.specs.push_back({d, n.len});
  }
  static size_t first_field(const Node& n) {
    return n.nchildren() == n.dtype->children.size() + 1 ? 1 : 0;
  }
  Col decode(const Node& n, Ctx& c) const override {
    Col out;
    out.layout = Layout::Struct;
    out.len = n.len;
    size_t f0 = first_field(n);
    if (f0) out.validity = decode_validity(n.children[0], n.len, c);
    out.null_count = -1;
    normalize_validity(out);
    for (size_t i = f0; i < n.nchildren(); i++) {
      if (!n.children[i]) unsupported("vortex.struct: field ", i - f0, " was not read");
      out.children.push_back(vx::decode(*n.children[i], c));
    }
    return out;
  }
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = first_field(n) ? decode_validity(n.children[0], n.len, c) : Buf();
    return true;
  }
};
REGISTER_ENCODING(StructEnc);

// -- vortex.ext -------------------------------------------------------------------------------
class ExtEnc : public Encoding {
 public:
  ExtEnc() : Encoding("vortex.ext", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Extension) malformed("vortex.ext cannot hold ", dtype_repr(d));
  }
  void child_specs(Node& n, Tree&) const override { n.specs.push_back({n.dtype->children[0], n.len}); }
  Col decode(const Node& n, Ctx& c) const override { return vx::decode(n.child(0), c); }
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = node_validity(n.child(0), c);
    return true;
  }
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    out = vx::compare(n.child(0), v, op, c);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    out = vx::is_in(n.child(0), v, c);
    return true;
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    out = vx::take(n.child(0), idx, k, c);
    return true;
  }
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    const Node& s = n.child(0);
    return s.enc && s.len && s.enc->int_bounds(s, lo, hi, c);
  }
};
REGISTER_ENCODING(ExtEnc);

// -- vortex.varbin ----------------------------------------------------------------------------
struct VarBinMeta : MetaBase {
  PType offsets = PType::I32;
};

class VarBinEnc : public ChildValidityEncoding<1> {
 public:
  VarBinEnc() : ChildValidityEncoding("vortex.varbin", true) {}
  void check_dtype(const DType& d) const override {
    if (!d.is_string_like()) malformed("vortex.varbin cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "VarBinMetadata");
    make_meta<VarBinMeta>(n).offsets = int_ptype_of(f.get_uint(1, 0), "vortex.varbin offsets");
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override {
    n.specs.push_back({prim(n.m<VarBinMeta>().offsets, false), n.len + 1});
    validity_spec(n, 1, n.specs);
  }
  Col decode(const Node& n, Ctx& c) const override {
    Col offs = decode_ints(n.child(0), c, "vortex.varbin offsets");
    Col out;
    out.layout = Layout::String;
    out.len = n.len;
    int64_t first = 0;
    out.offsets = arrow_offsets(offs, n.buffers[0].len, "vortex.varbin", &first);
    uint64_t last = n.len + 1 ? uint64_t(out.offsets.as<int32_t>()[n.len]) : 0;
    out.values = n.buffers[0].slice(size_t(first), size_t(last));
    return with_own_validity(std::move(out), n, c);
  }
};
REGISTER_ENCODING(VarBinEnc);

// -- vortex.varbinview ------------------------------------------------------------------------
class VarBinViewEnc : public ChildValidityEncoding<0> {
 public:
  VarBinViewEnc() : ChildValidityEncoding("vortex.varbinview", true) {}
  void check_dtype(const DType& d) const override {
    if (!d.is_string_like()) malformed("vortex.varbinview cannot hold ", dtype_repr(d));
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 65535}; }
  void child_specs(Node& n, Tree&) const override { validity_spec(n, 0, n.specs); }
  void validate(Node& n, Tree&) const override {
    if (n.buffers.back().len != sat_mul(16, n.len))
      malformed("vortex.varbinview views buffer is ", n.buffers.back().len, " bytes for ", n.len, " rows");
  }
  Col decode(const Node& n, Ctx& c) const override {
    const Buf& views = n.buffers.back();
    size_t nd = n.buffers.size() - 1;
    const uint8_t* v = views.data();
    for (uint64_t i = 0; i < n.len; i++) {
      const uint8_t* w = v + 16 * i;
      uint32_t len = load<uint32_t>(w);
      if (len > 12) {
        uint32_t bi = load<uint32_t>(w + 8), off = load<uint32_t>(w + 12);
        if (nd == 0 || bi >= nd) malformed("vortex.varbinview: a view names a missing data buffer");
        if (uint64_t(off) + len > n.buffers[bi].len) malformed("vortex.varbinview: a view runs past its data buffer");
      }
    }
    Col out;
    out.layout = Layout::View;
    out.len = n.len;
    out.values = views;
    if (reinterpret_cast<uintptr_t>(views.ptr) & 15) out.values = copy_of(views.ptr, views.len);
    for (size_t i = 0; i < nd; i++) out.data.push_back(n.buffers[i]);
    return with_own_validity(std::move(out), n, c);
  }
};
REGISTER_ENCODING(VarBinViewEnc);

}  // namespace

Buf arrow_offsets(const Col& offs, uint64_t data_len, const std::string& what, int64_t* first) {
  uint64_t k = offs.len;
  if (k == 0) malformed(what, ": no offsets");
  Buf out;
  with_int_ptype(offs.ptype, [&](auto t) {
    using T = decltype(t);
    const T* o = offs.vals<T>();
    i128 lo = i128(o[0]), hi = i128(o[k - 1]);
    if (lo < 0 || hi > i128(data_len))
      malformed(what, ": offsets [", lo, ", ", hi, "] fall outside ", data_len, " bytes of data");
    for (uint64_t i = 1; i < k; i++)
      if (o[i] < o[i - 1]) malformed(what, ": offsets are not monotonic");
    if (hi - lo > 0x7FFFFFFF) unsupported(what, ": more than 2 GiB of strings in one array");
    *first = int64_t(lo);
    if constexpr (std::is_same_v<T, int32_t>) {
      if (lo == 0) {
        out = offs.values;
        return;
      }
    }
    out = alloc(size_t(4 * k));
    int32_t* d = out.mut<int32_t>();
    for (uint64_t i = 0; i < k; i++) d[i] = int32_t(i128(o[i]) - lo);
  });
  return out;
}

}  // namespace vx
