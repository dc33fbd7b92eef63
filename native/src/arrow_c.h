// The Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html):
// the ABI structs, and the export of a Col as an ArrowArray whose buffers stay alive
// until the consumer calls release.
#pragma once

#include <cstdint>

#include "col.h"

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
extern "C" {
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
}
#endif

namespace vx {

// Move `c` into `out` (which the caller owns and eventually releases).
void export_col(Col&& c, ArrowArray* out);
// an Arrow dictionary array: `codes` (int32, with the rows' validity) indexing `values`
void export_dictionary(Col&& codes, Col&& values, ArrowArray* out);
// A struct array (a record batch) of `cols`, all of `len` rows.
void export_struct(std::vector<Col>&& cols, uint64_t len, ArrowArray* out);

// Import an ArrowArray (moved: `in` is released by the Col's buffers) of a layout decoders
// produce; `layout_of` describes what the caller expects. Used for arrays Python decoded.
Col import_col(ArrowArray* in, const Col& like);

}  // namespace vx
