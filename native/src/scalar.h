// ScalarValue (protobuf) decoding: the native twin of vortex_io._scalar.value_from_proto.
#pragma once

#include <string>
#include <vector>

#include "dtype.h"

namespace vx {

struct Scalar {
  bool null = true;
  bool b = false;       // Bool
  i128 i = 0;           // integers (in the dtype's range), decimals up to 128 bits
  double f = 0;         // floats (f16/f32 values widened exactly)
  bool wide = false;    // a 256-bit decimal: `bytes` holds its 32 little-endian bytes
  std::string bytes;    // Utf8 / Binary
  std::vector<Scalar> items;  // List / FixedSizeList / Struct
};

// Decode ScalarValue bytes of dtype `d` (Scalar.from_proto: empty bytes are a null, which
// needs a nullable dtype).
Scalar scalar_from_proto(const DType& d, Bytes data);
// The ScalarValue message itself (value_from_proto: empty bytes hold no value).
Scalar value_from_proto(const DType& d, Bytes data, int depth = 0);

// half -> float (exact)
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

bool utf8_valid(const uint8_t* p, size_t n);

}  // namespace vx
