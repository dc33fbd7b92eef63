// Shared by the libFuzzer harnesses: reading the input, exact-size heap copies (so
// AddressSanitizer sees an overrun by one byte), and the layout check of decoded columns.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "col.h"
#include "vx.h"
#include "dtype.h"
#include "memory.h"
#include "message.h"

namespace vxfuzz {

using namespace vx;

// A bug the harness found (not a clean rejection): report and abort (libFuzzer saves the input).
[[noreturn]] inline void bug(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "\n*** vortex_io fuzz harness: %s %s\n", what, detail.c_str());
  std::abort();
}

// Consuming the fuzz input front to back; reads past its end give zeros.
struct Input {
  const uint8_t* p;
  size_t n;
  size_t pos = 0;
  uint8_t u8() { return pos < n ? p[pos++] : 0; }
  template <class T>
  T le() {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); i++) v = T(v | (T(u8()) << (8 * i)));
    return v;
  }
  Bytes take(size_t k) {
    if (k > n - pos) k = n - pos;
    Bytes b(p + pos, k);
    pos += k;
    return b;
  }
  Bytes rest() { return take(n - pos); }
};

// Heap memory of exactly the input's size (not the fuzzer's buffer: a Buf of our own).
struct HeapMem final : Mem {
  explicit HeapMem(size_t n) {
    base = n ? static_cast<uint8_t*>(std::malloc(n)) : nullptr;
    cap = n;
    owned = false;  // read-only input, as a Python buffer is
  }
  ~HeapMem() override { std::free(base); }
};

inline Buf heap_copy(Bytes b) {
  auto m = std::make_shared<HeapMem>(b.n);
  if (b.n) std::memcpy(m->base, b.p, b.n);
  uint8_t* p = m->base;
  return Buf(std::move(m), p, b.n);
}

// The dtype program of an input: the parsed dtype, or nullptr when it is not one (the
// harness rejects the input: it stays out of the corpus).
inline const DType* read_dtype(Input& in, DTypeArena& arena) {
  Bytes program = in.take(in.le<uint16_t>());
  try {
    return parse_dtype_program(program, arena);
  } catch (Error&) {
    return nullptr;
  }
}

// What fuzz_message and fuzz_take read after the flags and the dtype: one Array message as
// the native reader gets it (row count, encodings table, body; native/fuzz/fuzz_message.cpp
// has the byte layout).
inline MsgIn read_message(Input& in) {
  MsgIn m;
  m.rows = in.le<uint64_t>();
  unsigned ne = in.u8();
  for (unsigned i = 0; i < ne; i++) {
    uint8_t l = in.u8();
    Bytes id = in.take(l & 0x7f);
    m.encodings.emplace_back(reinterpret_cast<const char*>(id.p), id.n);
    m.known.push_back((l & 0x80) != 0);
  }
  m.body = heap_copy(in.rest());
  return m;
}

// the reader's limits under fuzz/harness.py's FUZZ_LIMITS (64 MiB per batch)
inline Limits message_limits() {
  Limits l;
  l.max_body_bytes = 64u << 20;
  l.max_decoded_bytes = 64u << 20;
  return l;
}

// Read every byte of a buffer (an out-of-bounds range shows up under ASan).
inline void touch(const Buf& b) {
  uint8_t acc = 0;
  for (size_t i = 0; i < b.len; i++) acc = uint8_t(acc + b.ptr[i]);
  __asm__ volatile("" : : "r"(acc));  // keep the reads
}

// What Arrow (pyarrow's import of the exported column, with the schema Python derives from
// the dtype: vortex_io._arrow.dtype_to_arrow) relies on: the layout of the dtype, buffers
// long enough for `len` rows, offsets and views inside their data, children long enough,
// and a null count that matches the validity bitmap. A violation is a bug: pyarrow would
// read out of bounds (or see other values than the reference reader). Values are not
// checked (UTF-8, decimal precision, a view's 4-byte prefix against its data: the readers
// pass them through as the wire has them, as Arrow IPC does).
inline void check_col(const Col& c, const DType& d, bool string_view, const std::string& path = "col") {
  auto fail = [&](const std::string& why) {
    bug("decoded column breaks the Arrow layout:", cat(path, " (", dtype_repr(d), ", ", c.len, " rows): ", why));
  };
  const DType& s = d.storage();
  const uint64_t n = c.len;
  if (c.layout != Layout::Null) {
    if (!c.validity.empty()) {
      if (c.validity.len < (n + 7) / 8) fail(cat("validity of ", c.validity.len, " bytes"));
      touch(c.validity);
      int64_t nulls = int64_t(n - count_ones(c.validity.data(), n));
      if (c.null_count != -1 && c.null_count != nulls)
        fail(cat("null_count ", c.null_count, " but the bitmap has ", nulls, " nulls"));
    } else if (c.null_count != 0) {
      fail(cat("null_count ", c.null_count, " without a validity bitmap"));
    }
  }
  auto need = [&](const Buf& b, uint64_t bytes, const char* what) {
    if (b.len < bytes) fail(cat(what, " buffer of ", b.len, " bytes, ", bytes, " needed"));
    touch(b);
  };
  // int32 offsets: (n + 1) of them, non-decreasing from >= 0, the last at most `limit`
  auto offsets = [&](uint64_t limit, const char* what) {
    need(c.offsets, 4 * (n + 1), "offsets");
    const uint8_t* o = c.offsets.data();
    int32_t prev = load<int32_t>(o);
    if (prev < 0) fail(cat("first offset ", prev));
    for (uint64_t i = 1; i <= n; i++) {
      int32_t x = load<int32_t>(o + 4 * i);
      if (x < prev) fail(cat("offset ", i, " = ", x, " < ", prev));
      prev = x;
    }
    if (uint64_t(prev) > limit) fail(cat("last offset ", prev, " past the ", limit, " ", what));
  };
  switch (s.kind) {
    case Kind::Null:
      if (c.layout != Layout::Null) fail("not a null layout");
      break;
    case Kind::Bool:
      if (c.layout != Layout::Bool) fail("not a bool layout");
      need(c.values, (n + 7) / 8, "values");
      break;
    case Kind::Primitive:
      if (c.layout != Layout::Prim || c.ptype != s.ptype) fail(cat("not a ", ptype_name(s.ptype), " layout"));
      need(c.values, n * uint64_t(ptype_width(s.ptype)), "values");
      break;
    case Kind::Decimal: {
      unsigned w = s.precision <= 38 ? 16 : 32;
      if (c.layout != Layout::Decimal || c.dec_width != w) fail(cat("not a decimal", 8 * w, " layout"));
      need(c.values, n * w, "values");
      break;
    }
    case Kind::Utf8:
    case Kind::Binary:
      if (string_view) {
        if (c.layout != Layout::View) fail("not a view layout");
        need(c.values, 16 * n, "views");
        for (const Buf& b : c.data) touch(b);
        for (uint64_t i = 0; i < n; i++) {
          const uint8_t* v = c.values.data() + 16 * i;
          int32_t len = load<int32_t>(v);
          if (len < 0) fail(cat("view ", i, " of length ", len));
          if (len <= 12) continue;
          int32_t bi = load<int32_t>(v + 8), off = load<int32_t>(v + 12);
          if (bi < 0 || size_t(bi) >= c.data.size()) fail(cat("view ", i, " names data buffer ", bi));
          if (off < 0 || uint64_t(off) + uint64_t(len) > c.data[size_t(bi)].len)
            fail(cat("view ", i, " [", off, ", +", len, ") past data buffer ", bi));
        }
      } else {
        if (c.layout != Layout::String) fail("not a string layout");
        touch(c.values);
        offsets(c.values.len, "data bytes");
      }
      break;
    case Kind::Struct:
      if (c.layout != Layout::Struct) fail("not a struct layout");
      if (c.children.size() != s.children.size()) fail(cat(c.children.size(), " fields"));
      for (size_t i = 0; i < c.children.size(); i++) {
        if (c.children[i].len < n) fail(cat("field ", i, " of ", c.children[i].len, " rows"));
        check_col(c.children[i], *s.children[i], string_view, cat(path, ".", s.names[i]));
      }
      break;
    case Kind::List:
      if (c.layout != Layout::List || c.children.size() != 1) fail("not a list layout");
      offsets(c.children[0].len, "elements");
      check_col(c.children[0], *s.children[0], string_view, path + "[]");
      break;
    case Kind::FixedSizeList:
      if (c.layout != Layout::FSL || c.children.size() != 1 || c.fsl_size != s.size) fail("not a fixed-size list layout");
      if (c.children[0].len < n * uint64_t(s.size)) fail(cat(c.children[0].len, " elements"));
      check_col(c.children[0], *s.children[0], string_view, path + "[]");
      break;
    case Kind::Extension:
      fail("an extension's storage is an extension");
  }
}

}  // namespace vxfuzz
