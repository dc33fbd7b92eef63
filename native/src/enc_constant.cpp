// vortex.constant: one ScalarValue repeated (mirrors encodings/_constant.py).
#include "enc_util.h"

namespace vx {
namespace {

struct ConstMeta : MetaBase {
  Scalar value;
};

class ConstantEnc : public Encoding {
 public:
  ConstantEnc() : Encoding("vortex.constant") {}
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void validate(Node& n, Tree& t) const override {
    const Buf& raw = n.buffers[0];
    ConstMeta& m = make_meta<ConstMeta>(n);
    if (raw.len == 0) {
      if (!n.dtype->nullable) malformed("vortex.constant: empty scalar for a non-nullable dtype");
    } else {
      m.value = value_from_proto(*n.dtype, raw.bytes());
    }
    uint64_t width = estimate_width(*n.dtype);
    const Scalar& v = m.value;
    if (!v.null) {
      const DType& s = n.dtype->storage();
      if (s.is_string_like()) width += v.bytes.size();
      else if (s.kind == Kind::List || s.kind == Kind::FixedSizeList) width += 8 * v.items.size();
    }
    check_decoded(t.limits, sat_mul(width, n.len), cat("vortex.constant of ", n.len, " rows"));
  }
  Col decode(const Node& n, Ctx& c) const override {
    return repeat_scalar(n.m<ConstMeta>().value, *n.dtype, n.len, c);
  }
  bool validity(const Node& n, Buf& out, Ctx&) const override {
    out = n.m<ConstMeta>().value.null ? bitmap_alloc(n.len, false) : Buf();
    return true;
  }
  // every row answers as the one value does under `kernel` (a Mask of a column of one row);
  // a null value answers null. False on no rows.
  template <class K>
  static bool answer_all(const Node& n, Mask& out, Ctx& c, K&& kernel) {
    const Scalar& s = n.m<ConstMeta>().value;
    if (s.null) {
      out = mask_null(n.len);
      return true;
    }
    if (n.len == 0) return false;
    Col one = repeat_scalar(s, *n.dtype, 1, c);
    Mask m = kernel(one);
    out = mask_const(n.len, get_bit(m.vals.data(), 0));
    return true;
  }
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    return answer_all(n, out, c, [&](const Col& one) { return compare_col(one, n.dtype->storage(), v, op); });
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    return answer_all(n, out, c, [&](const Col& one) { return is_in_col(one, n.dtype->storage(), v); });
  }
  bool take(const Node& n, const uint32_t*, size_t k, Col& out, Ctx& c) const override {
    out = repeat_scalar(n.m<ConstMeta>().value, *n.dtype, k, c);
    return true;
  }
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx&) const override {
    const Scalar& s = n.m<ConstMeta>().value;
    const DType& st = n.dtype->storage();
    if (s.null || st.kind != Kind::Primitive || !ptype_is_int(st.ptype)) return false;
    lo = hi = s.i;
    return true;
  }
};
REGISTER_ENCODING(ConstantEnc);

template <class T>
Buf fill_values(T v, uint64_t n) {
  Buf b = alloc(size_t(n * sizeof(T)));
  T* p = b.mut<T>();
  for (uint64_t i = 0; i < n; i++) p[i] = v;
  return b;
}

}  // namespace

bool constant_bool_value(const Node& n, int* v) {
  if (!n.enc || std::string_view(n.enc->id()) != "vortex.constant" || !n.meta) return false;
  const Scalar& s = n.m<ConstMeta>().value;
  *v = s.null ? -1 : (s.b ? 1 : 0);
  return true;
}

// -- a column of scalars (the items of list constants) ----------------------------------------
static Col scalars_col(const std::vector<const Scalar*>& v, const DType& d, Ctx& c) {
  const DType& st = d.storage();
  const uint64_t n = v.size();
  Col out;
  out.len = n;
  if (st.kind == Kind::Null) {
    out.layout = Layout::Null;
    out.null_count = int64_t(n);
    return out;
  }
  bool any_null = false;
  for (const Scalar* x : v) any_null |= x->null;
  if (any_null) {
    out.validity = alloc_zeroed(bitmap_bytes(n));
    for (uint64_t i = 0; i < n; i++)
      if (!v[i]->null) set_bit(out.validity.ptr, i);
    out.null_count = -1;
  }
  switch (st.kind) {
    case Kind::Bool:
      out.layout = Layout::Bool;
      out.values = alloc_zeroed(bitmap_bytes(n));
      for (uint64_t i = 0; i < n; i++)
        if (!v[i]->null && v[i]->b) set_bit(out.values.ptr, i);
      break;
    case Kind::Primitive:
      out.layout = Layout::Prim;
      out.ptype = st.ptype;
      with_ptype(st.ptype, [&](auto t) {
        using T = decltype(t);
        out.values = alloc(size_t(n * sizeof(T)));
        T* p = out.values.mut<T>();
        for (uint64_t i = 0; i < n; i++) {
          const Scalar& x = *v[i];
          T y{};
          if (!x.null) {
            if constexpr (std::is_floating_point_v<T>) y = T(x.f);
            else if (st.ptype == PType::F16) y = T(float_to_half(float(x.f)));
            else y = T(x.i);
          }
          p[i] = y;
        }
      });
      break;
    case Kind::Decimal: {
      out.layout = Layout::Decimal;
      int w = st.precision <= 38 ? 16 : 32;
      out.dec_width = uint8_t(w);
      out.values = alloc_zeroed(size_t(n) * size_t(w));
      for (uint64_t i = 0; i < n; i++) {
        const Scalar& x = *v[i];
        uint8_t* d8 = out.values.ptr + i * size_t(w);
        if (x.null) continue;
        if (x.wide) {
          std::memcpy(d8, x.bytes.data(), 32);
        } else {
          std::memcpy(d8, &x.i, 16);
          if (w == 32) std::memset(d8 + 16, x.i < 0 ? 0xFF : 0, 16);
        }
      }
      break;
    }
    case Kind::Utf8:
    case Kind::Binary: {
      uint64_t total = 0;
      for (const Scalar* x : v) total += x->null ? 0 : x->bytes.size();
      if (total > 0x7FFFFFFF) unsupported("a constant of more than 2 GiB of strings");
      out.layout = Layout::String;
      out.offsets = alloc(size_t(4 * (n + 1)));
      out.values = alloc(size_t(total));
      int32_t* o = out.offsets.mut<int32_t>();
      int32_t pos = 0;
      o[0] = 0;
      for (uint64_t i = 0; i < n; i++) {
        if (!v[i]->null && !v[i]->bytes.empty()) {
          std::memcpy(out.values.ptr + pos, v[i]->bytes.data(), v[i]->bytes.size());
          pos += int32_t(v[i]->bytes.size());
        }
        o[i + 1] = pos;
      }
      break;
    }
    case Kind::Struct: {
      out.layout = Layout::Struct;
      Scalar null_item;
      std::vector<const Scalar*> f(static_cast<size_t>(n));
      for (size_t k = 0; k < st.children.size(); k++) {
        for (uint64_t i = 0; i < n; i++) f[size_t(i)] = v[i]->null ? &null_item : &v[i]->items[k];
        out.children.push_back(scalars_col(f, *st.children[k], c));
      }
      break;
    }
    case Kind::List:
    case Kind::FixedSizeList: {
      bool fsl = st.kind == Kind::FixedSizeList;
      // the elements, counted (and bounded: each costs at least a byte of output, and a
      // pointer here) before any is gathered: a nested constant multiplies the counts
      uint64_t elems = 0;
      if (fsl) {
        elems = sat_mul(n, uint64_t(st.size));
      } else {
        for (uint64_t i = 0; i < n; i++)
          if (!v[i]->null) elems = sat_add(elems, uint64_t(v[i]->items.size()));
      }
      check_decoded(c.lim, elems, cat("a constant of ", elems, " list elements"));
      Scalar null_item;
      std::vector<const Scalar*> items;
      items.reserve(size_t(elems));
      out.layout = fsl ? Layout::FSL : Layout::List;
      out.fsl_size = st.size;
      if (!fsl) {
        out.offsets = alloc(size_t(4 * (n + 1)));
        out.offsets.mut<int32_t>()[0] = 0;
      }
      for (uint64_t i = 0; i < n; i++) {
        const Scalar& x = *v[i];
        if (fsl) {
          for (uint32_t j = 0; j < st.size; j++) items.push_back(x.null ? &null_item : &x.items[j]);
        } else {
          if (!x.null)
            for (const Scalar& y : x.items) items.push_back(&y);
          if (items.size() > 0x7FFFFFFF) unsupported("a constant of more than 2^31 list elements");
          out.offsets.mut<int32_t>()[i + 1] = int32_t(items.size());
        }
      }
      out.children.push_back(scalars_col(items, *st.children[0], c));
      break;
    }
    default: unsupported("cannot make a column of ", dtype_repr(d), " scalars");
  }
  normalize_validity(out);
  return out;
}

Col repeat_scalar(const Scalar& s, const DType& d, uint64_t n, Ctx& c) {
  const DType& st = d.storage();
  Col out;
  out.len = n;
  if (st.kind == Kind::Null) {
    out.layout = Layout::Null;
    out.null_count = int64_t(n);
    return out;
  }
  if (s.null) {
    out.validity = bitmap_alloc(n, false);
    out.null_count = int64_t(n);
  }
  switch (st.kind) {
    case Kind::Bool:
      out.layout = Layout::Bool;
      out.values = bitmap_alloc(n, !s.null && s.b);
      break;
    case Kind::Primitive: {
      out.layout = Layout::Prim;
      out.ptype = st.ptype;
      with_ptype(st.ptype, [&](auto t) {
        using T = decltype(t);
        T v{};
        if (!s.null) {
          if constexpr (std::is_floating_point_v<T>) v = T(s.f);
          else if (st.ptype == PType::F16) v = T(float_to_half(float(s.f)));
          else v = T(s.i);
        }
        out.values = fill_values<T>(v, n);
      });
      break;
    }
    case Kind::Decimal: {
      out.layout = Layout::Decimal;
      int w = st.precision <= 38 ? 16 : 32;
      out.dec_width = uint8_t(w);
      uint8_t one[32] = {0};
      if (!s.null) {
        if (s.wide) {
          std::memcpy(one, s.bytes.data(), 32);
        } else {
          std::memcpy(one, &s.i, 16);
          if (w == 32) std::memset(one + 16, s.i < 0 ? 0xFF : 0, 16);
        }
      }
      out.values = alloc(size_t(n) * size_t(w));
      for (uint64_t i = 0; i < n; i++) std::memcpy(out.values.ptr + i * size_t(w), one, size_t(w));
      break;
    }
    case Kind::Utf8:
    case Kind::Binary: {
      const std::string& b = s.null ? std::string() : s.bytes;
      uint64_t total = sat_mul(b.size(), n);
      if (c.string_view || total > 0x7FFFFFFF) {
        out.layout = Layout::View;
        out.values = alloc(size_t(16 * n));
        uint8_t view[16] = {0};
        uint32_t len = uint32_t(b.size());
        std::memcpy(view, &len, 4);
        if (b.size() <= 12) {
          std::memcpy(view + 4, b.data(), b.size());
        } else {
          std::memcpy(view + 4, b.data(), 4);
          out.data.push_back(copy_of(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
        }
        for (uint64_t i = 0; i < n; i++) std::memcpy(out.values.ptr + 16 * i, view, 16);
      } else {
        out.layout = Layout::String;
        out.offsets = alloc(size_t(4 * (n + 1)));
        int32_t* o = out.offsets.mut<int32_t>();
        out.values = alloc(size_t(total));
        for (uint64_t i = 0; i <= n; i++) o[i] = int32_t(i * b.size());
        if (!b.empty())  // (no data buffer for empty strings: values.ptr is null)
          for (uint64_t i = 0; i < n; i++) std::memcpy(out.values.ptr + i * b.size(), b.data(), b.size());
      }
      break;
    }
    case Kind::Struct: {
      out.layout = Layout::Struct;
      for (size_t f = 0; f < st.children.size(); f++) {
        Scalar fs;
        if (!s.null) fs = s.items[f];
        out.children.push_back(repeat_scalar(fs, *st.children[f], n, c));
      }
      break;
    }
    case Kind::List:
    case Kind::FixedSizeList: {
      // the value's items as a column, repeated
      const DType& e = *st.children[0];
      uint64_t m = st.kind == Kind::FixedSizeList ? st.size : (s.null ? 0 : s.items.size());
      uint64_t total = sat_mul(m, n);
      if (st.kind == Kind::List) {
        if (total > 0x7FFFFFFF) unsupported("a constant of more than 2^31 list elements");
        out.layout = Layout::List;
        out.offsets = alloc(size_t(4 * (n + 1)));
        int32_t* o = out.offsets.mut<int32_t>();
        for (uint64_t i = 0; i <= n; i++) o[i] = int32_t(i * m);
      } else {
        if (total > 0xFFFFFFFFull) unsupported("a constant of more than 2^32 list elements");
        out.layout = Layout::FSL;
        out.fsl_size = st.size;
      }
      // (bounded before the items are gathered: an FSL's size is read off the wire)
      check_decoded(c.lim, std::max(m, total), cat("a constant of ", std::max(m, total), " list elements"));
      std::vector<const Scalar*> items;
      Scalar null_item;
      items.reserve(size_t(m));
      for (uint64_t k = 0; k < m; k++) items.push_back(s.null ? &null_item : &s.items[size_t(k)]);
      Col one = scalars_col(items, e, c);
      if (n == 1 || total == 0) {
        out.children.push_back(n == 1 ? std::move(one) : empty_col(e, c));
      } else {
        Buf idx = alloc(size_t(4 * total));
        uint32_t* p = idx.mut<uint32_t>();
        for (uint64_t i = 0; i < total; i++) p[i] = uint32_t(i % m);
        out.children.push_back(take_col(one, p, size_t(total)));
      }
      break;
    }
    default:
      unsupported("cannot repeat a scalar of dtype ", dtype_repr(d));
  }
  return out;
}

}  // namespace vx

namespace vx {
const Scalar* constant_scalar(const Node& n) {
  if (!n.enc || std::string_view(n.enc->id()) != "vortex.constant" || !n.meta) return nullptr;
  return &n.m<ConstMeta>().value;
}
}  // namespace vx
