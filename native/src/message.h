// Decoding a window of Array messages as `_native.Stream.decode` does, without Python:
// module.cpp binds it (turning the inputs and results into Python objects), and the
// libFuzzer harness of the message decoder (native/fuzz/fuzz_message.cpp) drives it
// directly. Per message: build the tree (build_tree), then per requested column decode,
// conform and export it (Arrow C data); errors become a MsgOut error, foreign columns are
// left null for Python.
#pragma once

#include <functional>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "arrow_c.h"
#include "kernels.h"

namespace vx {

// One message as Python describes it: its body, row count (from the header), encoding IDs
// and which of those Python knows.
struct MsgIn {
  Buf body;
  uint64_t rows = 0;
  std::vector<std::string> encodings;
  std::vector<bool> known;
};

// The rows of every message (what a decode or scan of them is sized by: threads_for).
inline uint64_t total_rows(const std::vector<MsgIn>& in) {
  uint64_t n = 0;
  for (const MsgIn& m : in) n += m.rows;
  return n;
}

// What a message came to: an error, or one decoded column per requested field (null where
// Python has to decode it).
struct MsgOut {
  bool error = false;
  int kind = 0;
  std::string msg;
  std::vector<ArrowArray*> cols;  // owned until handed to Python
  bool whole = false;             // non-struct stream: cols[0] is the whole array
  MsgOut() = default;
  MsgOut(const MsgOut&) = delete;
  MsgOut& operator=(const MsgOut&) = delete;
  ~MsgOut();
};

// The `Message` flatbuffer of one message header, as vortex_io/_ipc/schema.py's
// decode_message_header reads it (the same checks in the same order, the same messages):
// throws vx::Error. Byte ranges point into `b`.
struct MessageHeaderIn {
  uint8_t version = 0;
  uint8_t type = 0;  // 1 Array, 2 Buffer, 3 DType
  uint64_t body_size = 0;
  uint32_t row_count = 0;
  std::vector<Bytes> encodings;  // UTF-8 checked
  uint8_t alignment_exponent = 0;
  bool has_metadata = false;
  std::vector<std::pair<Bytes, Bytes>> metadata;  // key, value (absent: empty)
};
MessageHeaderIn parse_message_header(Bytes b);

// Set up a tree for building message `m` under `lim`.
void prepare_tree(Tree& t, const MsgIn& m, const Limits& lim);

// Called with every decoded (conformed) column before it is exported; throws to reject.
// The fuzz harness checks the Arrow layout invariants here; Stream.decode passes none.
using ColCheck = std::function<void(const Col&, const DType&)>;

// Decode `in` (a window of messages of a stream of dtype `root`) on `threads` threads: one
// MsgOut per message, in order. `fields`: the root struct's field indices, each its own
// column (the caller checked them: root is a struct and each index is in range), or
// nullptr for the whole array as one column. Never throws vx::Error or bad_alloc: they
// become MsgOut errors.
std::vector<MsgOut> decode_messages(const std::vector<MsgIn>& in, const DType* root, const Limits& lim,
                                    const std::vector<int>* fields, bool string_view, int threads,
                                    const ColCheck* check = nullptr);

// One task of a parallel decode of messages: runs fn(), an Error's kind and message (or
// running out of memory, as a Limit error with the message `oom`) going into `kind` and
// `msg`; a NeedPython leaves them as they are (the column goes to Python).
template <class F>
void run_column_task(F&& fn, int& kind, std::string& msg, const char* oom) {
  try {
    fn();
  } catch (NeedPython&) {
  } catch (Error& e) {
    kind = int(e.kind);
    msg = e.msg;
  } catch (std::bad_alloc&) {
    kind = int(ErrKind::Limit);
    msg = oom;
  }
}

}  // namespace vx
