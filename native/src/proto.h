// A bounds-checked protobuf (proto3) wire parser: the native twin of vortex_io/_proto.py
// (same checks, same messages), for encoding metadata and ScalarValues.
#pragma once

#include <optional>
#include <vector>

#include "vx.h"

namespace vx::proto {

enum : uint32_t { VARINT = 0, I64 = 1, LEN = 2, I32 = 5 };

struct Field {
  uint64_t num;
  uint32_t wt;
  uint64_t v;  // varint value
  Bytes b;     // fixed or length-delimited bytes
};

inline uint64_t read_varint(Bytes d, size_t& pos, const std::string& name) {
  uint64_t result = 0;
  int shift = 0;
  while (true) {
    if (pos >= d.n) malformed(name, ": protobuf varint runs past the end");
    uint8_t b = d.p[pos++];
    if (shift < 64) result |= uint64_t(b & 0x7F) << shift;
    if (!(b & 0x80)) return result;
    shift += 7;
    if (shift >= 70) malformed(name, ": protobuf varint is too long");
  }
}

struct Fields {
  std::vector<Field> f;
  std::string name;

  const Field* last(uint64_t num) const {
    for (size_t i = f.size(); i-- > 0;)
      if (f[i].num == num) return &f[i];
    return nullptr;
  }
  bool has(uint64_t num) const { return last(num) != nullptr; }
  std::optional<uint64_t> get_int(uint64_t num) const {
    const Field* x = last(num);
    if (!x) return std::nullopt;
    if (x->wt != VARINT) malformed(name, ": field ", num, " is not a varint");
    return x->v;
  }
  // the unsigned value (default when absent), refusing values that do not fit `bits`
  uint64_t get_uint(uint64_t num, uint64_t dflt, int bits = 64) const {
    auto v = get_int(num);
    if (!v) return dflt;
    if (bits < 64 && *v >= (uint64_t(1) << bits))
      malformed(name, ": field ", num, " = ", *v, " does not fit in u", bits);
    return *v;
  }
  std::optional<uint64_t> opt_uint(uint64_t num, int bits = 64) const {
    if (!has(num)) return std::nullopt;
    return get_uint(num, 0, bits);
  }
  std::optional<bool> get_bool(uint64_t num) const {
    auto v = get_int(num);
    if (!v) return std::nullopt;
    return *v != 0;
  }
  std::optional<Bytes> get_bytes(uint64_t num) const {
    const Field* x = last(num);
    if (!x) return std::nullopt;
    if (x->wt != LEN) malformed(name, ": field ", num, " is not length-delimited");
    return x->b;
  }
  // (wire type, bytes) of a fixed32/fixed64 field
  const Field* get_fixed(uint64_t num) const {
    const Field* x = last(num);
    if (!x) return nullptr;
    if (x->wt != I32 && x->wt != I64) malformed(name, ": field ", num, " is not fixed-width");
    return x;
  }
  // every value of a repeated varint field (packed or not)
  std::vector<uint64_t> packed_varints(uint64_t num) const {
    std::vector<uint64_t> out;
    for (const Field& x : f) {
      if (x.num != num) continue;
      if (x.wt == VARINT) {
        out.push_back(x.v);
      } else if (x.wt == LEN) {
        size_t pos = 0;
        while (pos < x.b.n) out.push_back(read_varint(x.b, pos, name));
      } else {
        malformed(name, ": field ", num, " has wire type ", x.wt);
      }
    }
    return out;
  }
};

inline Fields parse(Bytes d, std::string name) {
  Fields out;
  out.name = std::move(name);
  size_t pos = 0;
  while (pos < d.n) {
    uint64_t key = read_varint(d, pos, out.name);
    uint64_t num = key >> 3;
    uint32_t wt = uint32_t(key & 7);
    if (num == 0) malformed(out.name, ": protobuf field number 0");
    Field fl{num, wt, 0, {}};
    if (wt == VARINT) {
      fl.v = read_varint(d, pos, out.name);
    } else if (wt == I64) {
      if (pos + 8 > d.n) malformed(out.name, ": fixed64 field ", num, " runs past the end");
      fl.b = d.sub(pos, 8);
      pos += 8;
    } else if (wt == I32) {
      if (pos + 4 > d.n) malformed(out.name, ": fixed32 field ", num, " runs past the end");
      fl.b = d.sub(pos, 4);
      pos += 4;
    } else if (wt == LEN) {
      uint64_t ln = read_varint(d, pos, out.name);
      if (ln > d.n - pos) malformed(out.name, ": field ", num, " of ", ln, " bytes runs past the end");
      fl.b = d.sub(pos, size_t(ln));
      pos += size_t(ln);
    } else {
      malformed(out.name, ": unsupported protobuf wire type ", wt);
    }
    out.f.push_back(fl);
  }
  return out;
}

inline std::optional<Fields> get_message(const Fields& f, uint64_t num, const std::string& name) {
  auto b = f.get_bytes(num);
  if (!b) return std::nullopt;
  return parse(*b, name);
}

inline uint64_t zigzag_decode(uint64_t u) { return (u >> 1) ^ (~(u & 1) + 1); }

}  // namespace vx::proto
