// A bounds-checked FlatBuffers table reader (the native twin of vortex_io/_ipc/flatbuf.py;
// the same checks and the same messages).
#pragma once

#include "vx.h"

namespace vx::fb {

[[noreturn]] inline void bad(const std::string& what) {
  malformed("flatbuffer ", what, " is outside the header");
}

struct Table {
  Bytes buf;
  uint64_t pos = 0;
  uint64_t vt = 0;
  uint32_t vt_len = 0;
  const char* name = "";

  Table() = default;
  Table(Bytes b, uint64_t p, const char* nm) : buf(b), name(nm) {
    const uint64_t n = b.n;
    if (p + 4 > n) malformed("flatbuffer table ", nm, " at ", p, " is outside the header");
    int64_t rel = load<int32_t>(b.p + p);
    int64_t v = int64_t(p) - rel;
    if (v < 0 || uint64_t(v) + 4 > n)
      malformed("flatbuffer vtable of ", nm, " at ", v, " is outside the header");
    uint32_t len = load<uint16_t>(b.p + v);
    if (len < 4 || (len & 1) || uint64_t(v) + len > n)
      malformed("flatbuffer vtable of ", nm, " has a bad size ", len);
    pos = p;
    vt = uint64_t(v);
    vt_len = len;
  }

  // number of field slots in the vtable
  uint32_t slots() const { return (vt_len - 4) >> 1; }
  // offset of the field in the table (0 when absent)
  uint32_t field_off(uint32_t slot) const {
    uint32_t o = 4 + 2 * slot;
    if (o >= vt_len) return 0;
    return load<uint16_t>(buf.p + vt + o);
  }
  uint64_t field(uint32_t slot) const {
    uint32_t off = field_off(slot);
    return off ? pos + off : 0;
  }
  template <class T>
  T scalar(uint32_t slot, T dflt, const char* what) const {
    uint64_t p = field(slot);
    if (!p) return dflt;
    if (p + sizeof(T) > buf.n) malformed("flatbuffer field ", name, ".", what, " is outside the header");
    return load<T>(buf.p + p);
  }
  bool has(uint32_t slot) const { return field(slot) != 0; }

  // absolute position of the object an offset field points to (0 when absent)
  uint64_t deref(uint32_t slot, const char* what) const {
    uint64_t p = field(slot);
    if (!p) return 0;
    if (p + 4 > buf.n) malformed("flatbuffer field ", name, ".", what, " is outside the header");
    uint64_t t = p + load<uint32_t>(buf.p + p);
    if (t + 4 > buf.n || t == p)
      malformed("flatbuffer field ", name, ".", what, " points outside the header");
    return t;
  }
  // (start, count) of a vector of `elem`-byte elements; false when absent
  bool vector(uint32_t slot, uint32_t elem, const char* what, uint64_t* start, uint64_t* count) const {
    uint64_t t = deref(slot, what);
    if (!t) return false;
    uint64_t n = load<uint32_t>(buf.p + t);
    if (t + 4 + n * elem > buf.n)
      malformed("flatbuffer vector ", name, ".", what, " of ", n, " elements runs past the header");
    *start = t + 4;
    *count = n;
    return true;
  }
  Table table(uint32_t slot, const char* nm, bool* present) const {
    uint64_t t = deref(slot, nm);
    *present = t != 0;
    return t ? Table(buf, t, nm) : Table();
  }
};

inline Table root(Bytes b, const char* name) {
  if (b.n < 8) malformed("flatbuffer ", name, " is only ", b.n, " bytes");
  return Table(b, load<uint32_t>(b.p), name);
}

}  // namespace vx::fb
