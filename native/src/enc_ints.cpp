// Shared pieces of the run-end / sparse encodings (enc_ints.h).
#include "enc_ints.h"

namespace vx {
namespace ints {

namespace {

template <class T>
void fill_runs(const T* src, const RunMap& r, T* out) {
  for (uint64_t j = r.lo; j < r.hi; j++) {
    T v = src[j];
    uint64_t a = r.starts[j - r.lo], b = r.starts[j - r.lo + 1];
    for (uint64_t i = a; i < b; i++) out[i] = v;
  }
}

// (pointer, length) of string j of a String or View column
inline uint64_t str_len(const Col& c, uint64_t j) {
  if (c.layout == Layout::String) {
    const int32_t* o = c.offsets.as<int32_t>();
    return uint64_t(int64_t(o[j + 1]) - int64_t(o[j]));
  }
  return load<uint32_t>(c.values.data() + 16 * j);
}

}  // namespace

Col expand_col(const Col& vals, const RunMap& r, uint64_t n, Ctx& c) {
  Col out;
  out.len = n;
  switch (vals.layout) {
    case Layout::Null:
      out.layout = Layout::Null;
      out.null_count = int64_t(n);
      return out;
    case Layout::Prim: {
      int w = ptype_width(vals.ptype);
      out = prim_col(vals.ptype, alloc(size_t(n) * size_t(w)), n);
      with_uint_ptype(vals.ptype, [&](auto t) {
        using T = decltype(t);
        fill_runs<T>(vals.vals<T>(), r, out.values.mut<T>());
      });
      break;
    }
    case Layout::Bool:
      out.layout = Layout::Bool;
      out.values = expand_bits(vals.values.data(), r, n);
      break;
    case Layout::String:
    case Layout::View: {
      // the reference bounds the bytes a gather of strings expands to (_arrow_gather)
      uint64_t total = 0;
      for (uint64_t j = r.lo; j < r.hi; j++)
        total = sat_add(total, sat_mul(str_len(vals, j), r.starts[j - r.lo + 1] - r.starts[j - r.lo]));
      check_decoded(c.lim, total, cat("gather of ", n, " strings"));
      Col views = vals.layout == Layout::View ? vals : to_views(vals);
      out.layout = Layout::View;
      out.data = views.data;
      out.values = alloc(size_t(16 * n));
      const uint8_t* vs = views.values.data();
      uint8_t* o = out.values.ptr;
      for (uint64_t j = r.lo; j < r.hi; j++) {
        uint64_t a = r.starts[j - r.lo], b = r.starts[j - r.lo + 1];
        for (uint64_t i = a; i < b; i++) std::memcpy(o + 16 * i, vs + 16 * j, 16);
      }
      break;
    }
    default: {
      Buf idx = alloc(size_t(4 * n));
      uint32_t* ix = idx.mut<uint32_t>();
      for (uint64_t j = r.lo; j < r.hi; j++) {
        uint64_t a = r.starts[j - r.lo], b = r.starts[j - r.lo + 1];
        for (uint64_t i = a; i < b; i++) ix[i] = uint32_t(j);
      }
      return take_col(vals, ix, size_t(n));  // (validity gathered too)
    }
  }
  if (!vals.validity.empty()) {
    out.validity = expand_bits(vals.validity.data(), r, n);
    out.null_count = -1;
    normalize_validity(out);
  }
  return out;
}

namespace {

[[noreturn]] void mismatch(const Col& base, const Col& patch) {
  malformed("vortex.sparse: patch values decoded to a column of another type (layout ", int(patch.layout),
            " for ", int(base.layout), ")");
}

// the validity of `patch` overlaid at the positions (a null fill: positions become valid)
void overlay_validity(Col& base, const Col& patch, const uint64_t* pos, size_t k) {
  if (patch.validity.empty() && base.validity.empty()) return;
  uint64_t n = base.len;
  if (base.validity.empty()) base.validity = bitmap_alloc(n, true);
  else if (!base.validity.unique_owned() || base.validity.len < bitmap_bytes(n))
    base.validity = bitmap_from(base.validity.data(), 0, n);
  uint8_t* v = base.validity.ptr;
  if (patch.validity.empty()) {
    for (size_t i = 0; i < k; i++) set_bit(v, pos[i]);
  } else {
    const uint8_t* pv = patch.validity.data();
    for (size_t i = 0; i < k; i++) {
      if (get_bit(pv, i)) set_bit(v, pos[i]);
      else clear_bit(v, pos[i]);
    }
  }
  base.null_count = -1;
  normalize_validity(base);
}

template <class T>
void scatter(T* dst, const T* src, const uint64_t* pos, size_t k) {
  for (size_t i = 0; i < k; i++) dst[pos[i]] = src[i];
}

}  // namespace

void overlay(Col& base, const Col& patch, const uint64_t* pos, size_t k) {
  if (patch.len < k) malformed("vortex.sparse: ", patch.len, " patch values for ", k, " patches");
  switch (base.layout) {
    case Layout::Null:
      if (patch.layout != Layout::Null) mismatch(base, patch);
      return;
    case Layout::Prim: {
      if (patch.layout != Layout::Prim || ptype_width(patch.ptype) != ptype_width(base.ptype)) mismatch(base, patch);
      if (!base.values.unique_owned()) base.values = copy_of(base.values.data(), base.values.len);
      with_uint_ptype(base.ptype, [&](auto t) {
        using T = decltype(t);
        scatter<T>(base.values.mut<T>(), patch.vals<T>(), pos, k);
      });
      break;
    }
    case Layout::Decimal: {
      if (patch.layout != Layout::Decimal || patch.dec_width != base.dec_width) mismatch(base, patch);
      if (!base.values.unique_owned()) base.values = copy_of(base.values.data(), base.values.len);
      size_t w = base.dec_width;
      for (size_t i = 0; i < k; i++) std::memcpy(base.values.ptr + pos[i] * w, patch.values.data() + i * w, w);
      break;
    }
    case Layout::Bool: {
      if (patch.layout != Layout::Bool) mismatch(base, patch);
      if (!base.values.unique_owned() || base.values.len < bitmap_bytes(base.len))
        base.values = bitmap_from(base.values.data(), 0, base.len);
      uint8_t* b = base.values.ptr;
      const uint8_t* p = patch.values.data();
      for (size_t i = 0; i < k; i++) {
        if (get_bit(p, i)) set_bit(b, pos[i]);
        else clear_bit(b, pos[i]);
      }
      break;
    }
    case Layout::String:
    case Layout::View: {
      if (patch.layout != Layout::String && patch.layout != Layout::View) mismatch(base, patch);
      if (base.layout == Layout::String) {
        Col v = to_views(base);
        v.validity = base.validity;
        v.null_count = base.null_count;
        base = std::move(v);
      } else if (!base.values.unique_owned()) {
        base.values = copy_of(base.values.data(), base.values.len);
      }
      Col pv = patch.layout == Layout::View ? patch : to_views(patch);
      uint32_t shift = uint32_t(base.data.size());
      for (const Buf& b : pv.data) base.data.push_back(b);
      uint8_t* o = base.values.ptr;
      const uint8_t* s = pv.values.data();
      for (size_t i = 0; i < k; i++) {
        uint8_t* d = o + 16 * pos[i];
        std::memcpy(d, s + 16 * i, 16);
        uint32_t len = load<uint32_t>(d);
        if (len > 12) {
          uint32_t bi = load<uint32_t>(d + 8) + shift;
          std::memcpy(d + 8, &bi, 4);
        } else {
          // Arrow wants an inline view's padding zero, and a patch's view off the wire may
          // not have it (the reference rebuilds its views from strings)
          std::memset(d + 4 + len, 0, 12 - len);
        }
      }
      break;
    }
    case Layout::Struct: {
      if (patch.layout != Layout::Struct || patch.children.size() != base.children.size()) mismatch(base, patch);
      for (size_t f = 0; f < base.children.size(); f++) overlay(base.children[f], patch.children[f], pos, k);
      break;
    }
    default:
      throw NeedPython();  // lists of a sparse array: rare, the reference decodes them
  }
  overlay_validity(base, patch, pos, k);
}

}  // namespace ints
}  // namespace vx
