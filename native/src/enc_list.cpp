// The list encodings: vortex.list, vortex.listview and vortex.fixed_size_list (mirrors
// encodings/{list_,listview,fixed_size_list}.py). Lists decode to the Arrow list layout
// (int32 offsets, which need not start at 0: a list's elements are kept whole, zero-copy);
// a list view becomes a list, its elements gathered unless the views are already laid end to
// end.
#include <algorithm>

#include "enc_util.h"

namespace vx {
namespace {

constexpr uint64_t kI32Max = 0x7FFFFFFF;

[[noreturn]] void too_long(const char* what) {
  // the reference makes an Arrow large_list here, which the stream's list type cannot hold
  unsupported(what, ": more than 2^31 list elements in one array");
}

// -- vortex.list ------------------------------------------------------------------------------
struct ListMeta : MetaBase {
  uint64_t elements_len = 0;
  PType offsets = PType::U8;
};

// Checked offsets (check_offsets) as int32 Arrow offsets, not re-based (zero-copy for i32).
Buf list_offsets(const Col& offs, uint64_t nel, const char* what) {
  uint64_t k = offs.len;
  if (k == 0) malformed(what, ": no offsets");
  Buf out;
  with_int_ptype(offs.ptype, [&](auto t) {
    using T = decltype(t);
    const T* o = offs.vals<T>();
    i128 lo = i128(o[0]), hi = i128(o[k - 1]);
    if (lo < 0 || hi > i128(nel))
      malformed(what, ": offsets [", lo, ", ", hi, "] fall outside ", nel, " bytes of data");
    bool mono = true;
    for (uint64_t i = 1; i < k; i++) mono &= !(o[i] < o[i - 1]);
    if (!mono) malformed(what, ": offsets are not monotonic");
    if (hi > i128(kI32Max)) too_long(what);
    if constexpr (std::is_same_v<T, int32_t>) {
      out = offs.values;
    } else {
      out = alloc(size_t(4 * k));
      int32_t* d = out.mut<int32_t>();
      for (uint64_t i = 0; i < k; i++) d[i] = int32_t(o[i]);
    }
  });
  return out;
}

class ListEnc : public ChildValidityEncoding<2> {
 public:
  ListEnc() : ChildValidityEncoding("vortex.list", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::List) malformed("vortex.list cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "ListMetadata");
    ListMeta& m = make_meta<ListMeta>(n);
    m.elements_len = f.get_uint(1, 0);
    m.offsets = int_ptype_of(f.get_uint(2, 0), "vortex.list offsets");
  }
  void child_specs(Node& n, Tree&) const override {
    const ListMeta& m = n.m<ListMeta>();
    n.specs.push_back({n.dtype->children[0], m.elements_len});
    n.specs.push_back({prim(m.offsets, false), sat_add(n.len, 1)});
    validity_spec(n, 2, n.specs);
  }

  // the checked int32 offsets (n + 1 of them)
  static Buf offsets(const Node& n, Ctx& c) {
    Col o = decode_ints(n.child(1), c, "vortex.list offsets");
    if (o.len != n.len + 1) malformed("vortex.list: ", o.len, " offsets for ", n.len, " rows");
    return list_offsets(o, n.child(0).len, "vortex.list");
  }

  Col decode(const Node& n, Ctx& c) const override {
    Buf offs = offsets(n, c);
    Col elems = vx::decode(n.child(0), c);
    if (elems.len != n.child(0).len) malformed("vortex.list elements decoded to ", elems.len, " rows");
    Col out;
    out.layout = Layout::List;
    out.len = n.len;
    out.offsets = std::move(offs);
    out.children.push_back(std::move(elems));
    return with_own_validity(std::move(out), n, c);
  }
  // the selected rows' elements taken from the (still encoded) elements child
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    Buf offs = offsets(n, c);
    const int32_t* o = offs.as<int32_t>();
    uint64_t total = 0;
    for (size_t i = 0; i < k; i++) total += uint64_t(o[idx[i] + 1] - o[idx[i]]);
    check_decoded(c.lim, sat_mul(total, 4), cat("a take of ", total, " list elements"));
    Buf pos = alloc(size_t(4 * total));
    uint32_t* p = pos.mut<uint32_t>();
    out = Col();
    out.layout = Layout::List;
    out.len = k;
    out.offsets = alloc(size_t(4 * (k + 1)));
    int32_t* oo = out.offsets.mut<int32_t>();
    uint64_t at = 0;
    oo[0] = 0;
    for (size_t i = 0; i < k; i++) {
      for (int32_t j = o[idx[i]]; j < o[idx[i] + 1]; j++) p[at++] = uint32_t(j);
      oo[i + 1] = int32_t(at);
    }
    out.children.push_back(total ? vx::take(n.child(0), p, size_t(total), c) : empty_col(*n.child(0).dtype, c));
    Buf v = decode_validity(opt_child(n, 2), n.len, c);
    if (!v.empty()) {
      out.validity = take_bits(v.data(), idx, k);
      out.null_count = -1;
      normalize_validity(out);
    }
    return true;
  }
};
REGISTER_ENCODING(ListEnc);

// -- vortex.listview --------------------------------------------------------------------------
struct ListViewMeta : MetaBase {
  uint64_t elements_len = 0;
  PType offsets = PType::U8;
  PType sizes = PType::U8;
};

// values of an integer column as int64, as numpy's astype(np.int64) (u64 wraps)
void ints_as_i64(const Col& col, int64_t* dst) {
  with_int_ptype(col.ptype, [&](auto t) {
    using T = decltype(t);
    const T* s = col.vals<T>();
    for (uint64_t i = 0; i < col.len; i++) dst[i] = int64_t(s[i]);
  });
}

class ListViewEnc : public ChildValidityEncoding<3> {
 public:
  ListViewEnc() : ChildValidityEncoding("vortex.listview", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::List) malformed("vortex.listview cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "ListViewMetadata");
    ListViewMeta& m = make_meta<ListViewMeta>(n);
    m.elements_len = f.get_uint(1, 0);
    m.offsets = int_ptype_of(f.get_uint(2, 0), "vortex.listview offsets");
    m.sizes = int_ptype_of(f.get_uint(3, 0), "vortex.listview sizes");
  }
  void child_specs(Node& n, Tree&) const override {
    const ListViewMeta& m = n.m<ListViewMeta>();
    n.specs.push_back({n.dtype->children[0], m.elements_len});
    n.specs.push_back({prim(m.offsets, false), n.len});
    n.specs.push_back({prim(m.sizes, false), n.len});
    validity_spec(n, 3, n.specs);
  }
  Col decode(const Node& n, Ctx& c) const override {
    const uint64_t len = n.len;
    Col oc = decode_ints(n.child(1), c, "vortex.listview offsets");
    Col sc = decode_ints(n.child(2), c, "vortex.listview sizes");
    if (oc.len != len || sc.len != len) malformed("vortex.listview: offsets or sizes do not match the length");
    const uint64_t nel = n.child(0).len;
    const uint64_t cap = std::min<uint64_t>(nel, uint64_t(INT64_MAX));  // (as the reference)
    Buf ob = alloc(size_t(8 * len)), sb = alloc(size_t(8 * len));
    int64_t* offs = ob.mut<int64_t>();
    int64_t* sizes = sb.mut<int64_t>();
    ints_as_i64(oc, offs);
    ints_as_i64(sc, sizes);
    bool bad = false;
    uint64_t total = 0;
    for (uint64_t i = 0; i < len; i++) {
      int64_t o = offs[i], s = sizes[i];
      bad |= o < 0 || s < 0 || uint64_t(o) > cap || uint64_t(s) > cap - uint64_t(o);
      total = sat_add(total, uint64_t(s));
    }
    if (bad) malformed("vortex.listview: a list view falls outside its elements");
    Col elems = vx::decode(n.child(0), c);
    if (elems.len != nel) malformed("vortex.listview elements decoded to ", elems.len, " rows");
    if (total > kI32Max) too_long("vortex.listview");
    Col out;
    out.layout = Layout::List;
    out.len = len;
    out.offsets = alloc(size_t(4 * (len + 1)));
    int32_t* oo = out.offsets.mut<int32_t>();
    // views laid end to end: the elements as they are (sliced only when the offsets would
    // not fit int32 otherwise)
    bool contiguous = len > 0;
    for (uint64_t i = 0, at = len ? uint64_t(offs[0]) : 0; i < len && contiguous; i++) {
      contiguous = uint64_t(offs[i]) == at;
      at += uint64_t(sizes[i]);
    }
    if (contiguous) {
      uint64_t first = uint64_t(offs[0]);
      bool whole = first + total <= kI32Max;  // offsets into the whole elements fit int32
      uint64_t at = whole ? first : 0;
      oo[0] = int32_t(at);
      for (uint64_t i = 0; i < len; i++) {
        at += uint64_t(sizes[i]);
        oo[i + 1] = int32_t(at);
      }
      out.children.push_back(whole ? std::move(elems) : slice_col(elems, first, total));
    } else {
      uint64_t maxend = 0;
      for (uint64_t i = 0; i < len; i++)
        if (sizes[i]) maxend = std::max(maxend, uint64_t(offs[i]) + uint64_t(sizes[i]));
      if (maxend > 0xFFFFFFFFull) unsupported("vortex.listview: a gather from more than 2^32 elements");
      check_decoded(c.lim, sat_mul(total, 4), cat("vortex.listview gather of ", total, " elements"));
      Buf pos = alloc(size_t(4 * total) + 4);
      uint32_t* p = pos.mut<uint32_t>();
      uint64_t at = 0;
      oo[0] = 0;
      for (uint64_t i = 0; i < len; i++) {
        uint32_t o = uint32_t(offs[i]);
        for (int64_t j = 0; j < sizes[i]; j++) p[at++] = o + uint32_t(j);
        oo[i + 1] = int32_t(at);
      }
      out.children.push_back(take_col(elems, p, size_t(total)));
    }
    return with_own_validity(std::move(out), n, c);
  }
};
REGISTER_ENCODING(ListViewEnc);

// -- vortex.fixed_size_list -------------------------------------------------------------------
class FixedSizeListEnc : public ChildValidityEncoding<1> {
 public:
  FixedSizeListEnc() : ChildValidityEncoding("vortex.fixed_size_list", true) {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::FixedSizeList) malformed("vortex.fixed_size_list cannot hold ", dtype_repr(d));
  }
  void child_specs(Node& n, Tree&) const override {
    n.specs.push_back({n.dtype->children[0], sat_mul(n.len, n.dtype->size)});
    validity_spec(n, 1, n.specs);
  }
  Col decode(const Node& n, Ctx& c) const override {
    const Node& e = n.child(0);
    if (e.len != n.len * uint64_t(n.dtype->size) || e.len > uint64_t(INT64_MAX))
      unsupported("vortex.fixed_size_list: ", n.len, " lists of ", n.dtype->size, " elements do not fit Arrow");
    Col elems = vx::decode(e, c);
    if (elems.len != e.len) malformed("vortex.fixed_size_list elements decoded to ", elems.len, " rows");
    Col out;
    out.layout = Layout::FSL;
    out.fsl_size = n.dtype->size;
    out.len = n.len;
    out.children.push_back(std::move(elems));
    return with_own_validity(std::move(out), n, c);
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    const uint64_t size = n.dtype->size;
    const Node& e = n.child(0);
    if (e.len != n.len * size || e.len > 0xFFFFFFFFull)
      unsupported("vortex.fixed_size_list: a take from more than 2^32 elements");
    uint64_t total = uint64_t(k) * size;
    check_decoded(c.lim, sat_mul(total, 4), cat("a take of ", total, " list elements"));
    Buf pos = alloc(size_t(4 * total) + 4);
    uint32_t* p = pos.mut<uint32_t>();
    uint64_t at = 0;
    for (size_t i = 0; i < k; i++) {
      uint32_t base = uint32_t(uint64_t(idx[i]) * size);
      for (uint64_t j = 0; j < size; j++) p[at++] = base + uint32_t(j);
    }
    out = Col();
    out.layout = Layout::FSL;
    out.fsl_size = uint32_t(size);
    out.len = k;
    out.children.push_back(total ? vx::take(e, p, size_t(total), c) : empty_col(*e.dtype, c));
    Buf v = decode_validity(opt_child(n, 1), n.len, c);
    if (!v.empty()) {
      out.validity = take_bits(v.data(), idx, k);
      out.null_count = -1;
      normalize_validity(out);
    }
    return true;
  }
};
REGISTER_ENCODING(FixedSizeListEnc);

}  // namespace
}  // namespace vx
