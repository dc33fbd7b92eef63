#include "patches.h"

namespace vx {

PatchesMeta PatchesMeta::from_fields(const proto::Fields& f, const std::string& name) {
  PatchesMeta m;
  m.len = f.get_uint(1, 0);
  if (m.len > (uint64_t(1) << 32)) malformed(name, ": ", m.len, " patches is more than an array can hold");
  m.offset = f.get_uint(2, 0);
  m.indices_ptype = int_ptype_of(f.get_uint(3, 0), name + " patch indices");
  m.chunk_offsets_len = f.opt_uint(4);
  auto cop = f.opt_uint(5);
  if (cop) m.chunk_offsets_ptype = int_ptype_of(*cop, name + " chunk offsets");
  m.offset_within_chunk = f.opt_uint(6);
  return m;
}

void PatchesMeta::child_specs(const DType* values_dtype, std::vector<ChildSpec>& out) const {
  out.push_back({prim(indices_ptype, false), len});
  out.push_back({values_dtype, len});
  if (chunk_offsets_ptype) out.push_back({prim(*chunk_offsets_ptype, false), chunk_offsets_len.value_or(0)});
}

PatchPositions patch_positions(const PatchesMeta& m, const Node& indices, uint64_t n, Ctx& c) {
  Col idx = decode_ints(indices, c, "patch indices");
  PatchPositions out;
  // (the reference reads the indices as int64 and subtracts the offset in int64)
  int64_t off = int64_t(m.offset);
  if (m.offset > uint64_t(INT64_MAX)) malformed("patch offset ", m.offset, " is out of range");
  bool all = true;
  int64_t prev = INT64_MIN;
  std::vector<uint64_t> pos;
  pos.reserve(size_t(idx.len));
  std::vector<uint64_t> sel;
  for_each_int(idx, [&](uint64_t i, auto v) {
    int64_t x = int64_t(v);
    if (x < prev) malformed("patch indices are not sorted");
    prev = x;
    int64_t p;
    if (__builtin_sub_overflow(x, off, &p)) malformed("patch index out of range");
    if (p >= 0 && uint64_t(p) < n) {
      pos.push_back(uint64_t(p));
      sel.push_back(i);
    } else {
      all = false;
    }
  });
  out.pos = std::move(pos);
  if (!all) out.sel = std::move(sel);
  return out;
}

void patch_hits(const uint64_t* pos, size_t npos, const uint32_t* idx, size_t k,
                std::vector<uint64_t>& at, std::vector<uint32_t>& which) {
  size_t j = 0;  // both sorted: a merge
  for (size_t i = 0; i < k && j < npos; i++) {
    while (j < npos && pos[j] < idx[i]) j++;
    while (j + 1 < npos && pos[j + 1] == idx[i]) j++;
    if (j < npos && pos[j] == idx[i]) {
      at.push_back(i);
      which.push_back(uint32_t(j));
    }
  }
}

Col patch_values(const Node& values, Ctx& c) {
  Col pv = decode(values, c);
  if (pv.layout != Layout::Prim) malformed("patch values must be primitive, not ", dtype_repr(*values.dtype));
  return pv;
}

void apply_patches(Col& values, const PatchesMeta& m, const Node& indices, const Node& pvalues,
                   Ctx& c, uint64_t add) {
  if (m.len == 0) return;
  PatchPositions pp = patch_positions(m, indices, values.len, c);
  Col pv = patch_values(pvalues, c);
  if (pp.size() == 0) return;
  with_ptype(values.ptype, [&](auto t) {
    using T = decltype(t);
    T* dst = values.values.mut<T>();
    auto put = [&](auto s) {
      using S = decltype(s);
      const S* src = pv.vals<S>();
      for (size_t i = 0; i < pp.size(); i++) {
        if constexpr (std::is_floating_point_v<T> || std::is_floating_point_v<S>) {
          dst[pp.pos[i]] = T(src[pp.which(i)]);
        } else {
          // wrapping addition (FoR); (int for floats: clang names the type even here)
          using U = std::make_unsigned_t<std::conditional_t<std::is_integral_v<T>, T, int>>;
          dst[pp.pos[i]] = T(U(U(T(src[pp.which(i)])) + U(add)));
        }
      }
    };
    if (pv.ptype == values.ptype) {
      put(T{});
    } else {
      with_ptype(pv.ptype, put);
    }
  });
  if (!pv.validity.empty()) {
    if (values.validity.empty()) values.validity = bitmap_alloc(values.len, true);
    else if (!values.validity.unique_owned()) values.validity = bitmap_from(values.validity.data(), 0, values.len);
    uint8_t* v = values.validity.ptr;
    const uint8_t* pvv = pv.validity.data();
    for (size_t i = 0; i < pp.size(); i++) {
      if (get_bit(pvv, pp.which(i))) set_bit(v, pp.pos[i]);
      else clear_bit(v, pp.pos[i]);
    }
    values.null_count = -1;
  }
}

}  // namespace vx
