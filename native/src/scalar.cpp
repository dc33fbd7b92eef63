#include "scalar.h"

#include <cmath>

#include "proto.h"

namespace vx {

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        man <<= 1;
        e++;
      } while (!(man & 0x400));
      man &= 0x3FF;
      bits = sign | uint32_t(127 - 15 - e) << 23 | man << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | man << 13;
  } else {
    bits = sign | (exp - 15 + 127) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xFF) - 127 + 15;
  uint32_t man = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0xFF) return uint16_t(sign | 0x7C00 | (man ? 0x200 | (man >> 13) : 0));
  if (exp >= 31) return uint16_t(sign | 0x7C00);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    man |= 0x800000;
    int shift = 14 - exp;
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | uint32_t(exp) << 10 | man >> 13;
  uint32_t rem = man & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
  return uint16_t(half);
}

bool utf8_valid(const uint8_t* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    // fast path: 8 ASCII bytes at a time
    if (i + 8 <= n) {
      uint64_t w = load<uint64_t>(p + i);
      if (!(w & 0x8080808080808080ull)) {
        i += 8;
        continue;
      }
    }
    uint8_t c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; k++) {
      uint8_t cc = p[i + k];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

namespace {

i128 int_of(const proto::Fields& f, const std::string& name) {
  if (f.has(3)) return i128(int64_t(proto::zigzag_decode(f.get_uint(3, 0))));
  if (f.has(4)) return i128(f.get_uint(4, 0));
  malformed(name, ": integer scalar has no integer value");
}

// Python: a sint64 field may carry a u64 bit pattern and vice versa -> wrap into the type
i128 wrap_int(i128 v, PType p) {
  int bits = 8 * ptype_width(p);
  i128 lo, hi;
  if (ptype_is_unsigned(p)) {
    lo = 0;
    hi = (i128(1) << bits) - 1;
  } else {
    lo = -(i128(1) << (bits - 1));
    hi = (i128(1) << (bits - 1)) - 1;
  }
  if (v >= lo && v <= hi) return v;
  u128 m = u128(v) & ((u128(1) << bits) - 1);
  i128 r = i128(m);
  if (ptype_is_signed_int(p) && r >= (i128(1) << (bits - 1))) r -= i128(1) << bits;
  return r;
}

}  // namespace

Scalar value_from_proto(const DType& d, Bytes data, int depth) {
  Scalar s;
  if (depth > 32) malformed("scalar nesting is too deep");
  std::string name = cat("scalar of ", dtype_repr(d));
  proto::Fields f = proto::parse(data, name);
  if (f.has(1)) {
    if (!d.nullable && d.kind != Kind::Null) malformed(name, ": null value for a non-nullable dtype");
    return s;
  }
  const DType& st = d.storage();
  s.null = false;
  switch (st.kind) {
    case Kind::Null: malformed(name, ": a null dtype holds only nulls");
    case Kind::Bool:
      if (!f.has(2)) malformed(name, ": missing bool value");
      s.b = *f.get_int(2) != 0;
      return s;
    case Kind::Primitive: {
      PType p = st.ptype;
      if (ptype_is_int(p)) {
        s.i = wrap_int(int_of(f, name), p);
        return s;
      }
      if (p == PType::F16) {
        if (!f.has(10)) malformed(name, ": missing f16 value");
        s.f = double(half_to_float(uint16_t(f.get_uint(10, 0, 16))));
        return s;
      }
      const proto::Field* fx;
      if (p == PType::F32) {
        fx = f.get_fixed(5);
        if (!fx) fx = f.get_fixed(6);
        if (!fx) malformed(name, ": missing f32 value");
        if (fx->b.n == 4) s.f = double(load<float>(fx->b.p));
        else s.f = double(float(load<double>(fx->b.p)));
        return s;
      }
      fx = f.get_fixed(6);
      if (!fx) fx = f.get_fixed(5);
      if (!fx) malformed(name, ": missing f64 value");
      s.f = fx->b.n == 8 ? load<double>(fx->b.p) : double(load<float>(fx->b.p));
      return s;
    }
    case Kind::Decimal: {
      auto raw = f.get_bytes(8);
      if (!raw) {
        if (f.has(3) || f.has(4)) {
          s.i = int_of(f, name);
          return s;
        }
        malformed(name, ": missing decimal value");
      }
      size_t n = raw->n;
      if (n != 1 && n != 2 && n != 4 && n != 8 && n != 16 && n != 32)
        malformed(name, ": decimal value of ", n, " bytes");
      if (n == 32) {
        s.wide = true;
        s.bytes.assign(reinterpret_cast<const char*>(raw->p), 32);
        // narrow it when it fits 128 bits (sign extension of the low half)
        bool neg = raw->p[15] & 0x80;
        bool fits = true;
        for (int k = 16; k < 32; k++)
          if (raw->p[k] != (neg ? 0xFF : 0x00)) fits = false;
        if (fits) {
          s.wide = false;
          u128 u = 0;
          for (int k = 15; k >= 0; k--) u = (u << 8) | raw->p[k];
          s.i = i128(u);
        }
        return s;
      }
      u128 u = 0;
      for (size_t k = n; k-- > 0;) u = (u << 8) | raw->p[k];
      if (n < 16 && (raw->p[n - 1] & 0x80)) u |= ~u128(0) << (8 * n);  // sign-extend
      s.i = i128(u);
      return s;
    }
    case Kind::Utf8: {
      auto raw = f.get_bytes(7);
      if (!raw) raw = f.get_bytes(8);
      if (!raw) malformed(name, ": missing string value");
      if (!utf8_valid(raw->p, raw->n)) malformed(name, ": string value is not UTF-8");
      s.bytes.assign(reinterpret_cast<const char*>(raw->p), raw->n);
      return s;
    }
    case Kind::Binary: {
      auto raw = f.get_bytes(8);
      if (!raw) raw = f.get_bytes(7);
      if (!raw) malformed(name, ": missing binary value");
      s.bytes.assign(reinterpret_cast<const char*>(raw->p), raw->n);
      return s;
    }
    case Kind::List:
    case Kind::FixedSizeList:
    case Kind::Struct: {
      auto lst = proto::get_message(f, 9, name);
      std::vector<Bytes> items;
      if (lst) {
        for (const auto& x : lst->f) {
          if (x.num != 1) continue;
          if (x.wt != proto::LEN) malformed(name, ": list element is not a message");
          items.push_back(x.b);
        }
      }
      if (st.kind == Kind::Struct) {
        if (items.size() != st.children.size())
          malformed(name, ": ", items.size(), " values for ", st.children.size(), " fields");
        for (size_t k = 0; k < items.size(); k++)
          s.items.push_back(value_from_proto(*st.children[k], items[k], depth + 1));
        return s;
      }
      if (st.kind == Kind::FixedSizeList && items.size() != st.size)
        malformed(name, ": ", items.size(), " values for a list of size ", st.size);
      for (auto& it : items) s.items.push_back(value_from_proto(*st.children[0], it, depth + 1));
      return s;
    }
    default: break;
  }
  unsupported("cannot read a scalar of dtype ", dtype_repr(d));
}

Scalar scalar_from_proto(const DType& d, Bytes data) {
  if (data.n == 0) {
    if (!d.nullable) malformed("empty scalar for a non-nullable ", dtype_repr(d));
    return Scalar();
  }
  return value_from_proto(d, data, 0);
}

}  // namespace vx
