// libFuzzer harness of the ScalarValue decoder (scalar.cpp: statistics, FoR references,
// constants' values, ...) and of repeat_scalar (a constant's column), the column checked
// like a decoded one (check_col).
//
// Input: u16 P, P bytes of dtype program (vortex_io._native_glue.dtype_program), u8 rows,
// then the ScalarValue bytes.
#include "fuzz_util.h"
#include "enc_util.h"
#include "scalar.h"

using namespace vx;
using namespace vxfuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  DTypeArena arena;
  const DType* d = read_dtype(in, arena);
  if (!d) return -1;
  uint64_t rows = in.u8();
  Bytes raw = in.rest();
  Buf copy = heap_copy(raw);
  try {
    (void)value_from_proto(*d, copy.bytes());
  } catch (Error&) {
  }
  Scalar s;
  try {
    s = scalar_from_proto(*d, copy.bytes());
  } catch (Error&) {
    return 0;
  }
  Limits lim;
  lim.max_decoded_bytes = 1u << 16;  // small: the limit paths are what is fuzzed; 1 MiB columns (mmap under ASan) held it to ~800 exec/s
  for (bool sv : {false, true}) {
    try {
      Ctx c(lim);
      c.string_view = sv;
      Col col = repeat_scalar(s, *d, rows, c);
      conform(col, *d, sv);
      if (col.len != rows) bug("repeat_scalar: wrong length");
      check_col(col, *d, sv);
    } catch (Error&) {
    } catch (NeedPython&) {
    }
  }
  return 0;
}
