// Logical types (the native mirror of vortex_io.dtype).
//
// Python serializes a stream's DType once (vortex_io/_native_glue.py: dtype_program) and
// the native side parses it into an immutable tree. Nodes of an encoding tree may carry
// derived dtypes (dictionary codes, patch indices, validity...): the common ones are
// static singletons (`prim`, `bool_dtype`), others live in a Tree's arena.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "vx.h"

namespace vx {

// numbered as the DType union tags on the wire
enum class Kind : uint8_t {
  Null = 1,
  Bool = 2,
  Primitive = 3,
  Decimal = 4,
  Utf8 = 5,
  Binary = 6,
  Struct = 7,
  List = 8,
  Extension = 9,
  FixedSizeList = 10,
};

// numbered as on the wire
enum class PType : uint8_t { U8 = 0, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64 };
constexpr int kNumPTypes = 11;

inline int ptype_width(PType p) {
  static const int w[] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8};
  return w[int(p)];
}
inline bool ptype_is_int(PType p) { return uint8_t(p) <= 7; }
inline bool ptype_is_unsigned(PType p) { return uint8_t(p) <= 3; }
inline bool ptype_is_signed_int(PType p) { return uint8_t(p) >= 4 && uint8_t(p) <= 7; }
inline bool ptype_is_float(PType p) { return uint8_t(p) >= 8; }
const char* ptype_name(PType p);
// the unsigned type of the same width
inline PType ptype_unsigned(PType p) {
  switch (ptype_width(p)) {
    case 1: return PType::U8;
    case 2: return PType::U16;
    case 4: return PType::U32;
    default: return PType::U64;
  }
}
inline bool ptype_valid(unsigned v) { return v <= 10; }

enum class ExtKind : uint8_t { Other = 0, Timestamp = 1, Date = 2, Time = 3 };
// TimeUnit, numbered as on the wire; kUnitUnknown when the metadata names none
enum : uint8_t { kUnitNs = 0, kUnitUs = 1, kUnitMs = 2, kUnitS = 3, kUnitD = 4, kUnitUnknown = 255 };

struct DType {
  Kind kind = Kind::Null;
  bool nullable = true;
  PType ptype = PType::U8;   // Primitive
  uint8_t precision = 0;     // Decimal
  int8_t scale = 0;          // Decimal
  uint32_t size = 0;         // FixedSizeList
  ExtKind ext = ExtKind::Other;
  uint8_t unit = kUnitUnknown;  // temporal extensions
  std::string ext_id;
  std::string ext_meta;
  std::vector<std::string> names;         // Struct
  std::vector<const DType*> children;     // Struct fields, List/FSL element, Extension storage

  bool is_int() const { return kind == Kind::Primitive && ptype_is_int(ptype); }
  const DType& storage() const {  // an extension's storage (recursively), else itself
    const DType* d = this;
    while (d->kind == Kind::Extension) d = d->children[0];
    return *d;
  }
  bool is_string_like() const { return kind == Kind::Utf8 || kind == Kind::Binary; }
};

bool dtype_eq(const DType& a, const DType& b);
std::string dtype_repr(const DType& d);
// rough decoded bytes per row (the Python _estimate_width)
uint64_t estimate_width(const DType& d);

// the static dtype of a primitive type / of a non-nullable bool
const DType* prim(PType p, bool nullable);
const DType* bool_dtype(bool nullable = false);

// An arena of dtypes: the stream's tree, and derived dtypes of one message's nodes.
struct DTypeArena {
  std::deque<DType> items;
  DType* make() { return &items.emplace_back(); }
  // the same dtype with another nullability (shallow copy)
  const DType* with_nullable(const DType* d, bool nullable);
};

// Parse the Python serialization (see _native_glue.dtype_program); throws vx::Error.
const DType* parse_dtype_program(Bytes prog, DTypeArena& arena);

}  // namespace vx
