// libFuzzer harness of the message decoder: exactly what `_native.Stream.decode` does with
// one Array message (message.cpp: build_tree, then decode + conform + export of every
// column, then release), without Python. Every encoding registered with REGISTER_ENCODING
// is reachable through the encodings table of the input: a new enc_*.cpp is covered
// without changing this file (add its streams to the seed corpus: fuzz/native_corpus.py).
//
// Input (written by fuzz/native_corpus.py from real streams; all integers little-endian):
//   u8   flags       bit 0: string_view output; bit 1: decode the root struct's fields as
//                    columns (what read_arrow does for a non-nullable struct dtype); bit 2:
//                    two threads (the parallel path; default one)
//   u16  P, P bytes  the stream's dtype program (vortex_io._native_glue.dtype_program)
//   u64  rows        the message header's row count
//   u8   E           encodings table of E entries: u8 L (bit 7: Python knows the ID, so the
//                    native core may hand that subtree back), L & 0x7f bytes of ID
//   ...              the message body (buffers, then the Array flatbuffer, then its u32 length)
//
// Outcomes that are fine: a vx::Error (any kind) from the dtype program or the message, a
// column handed back to Python (NeedPython). Anything else is a bug: a crash, a sanitizer
// report, a leak, a hang, or a decoded column that breaks the Arrow layout (check_col).
#include "fuzz_util.h"
#include "message.h"

using namespace vx;
using namespace vxfuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  uint8_t flags = in.u8();
  const bool string_view = flags & 1;
  const int threads = (flags & 4) ? 2 : 1;
  DTypeArena arena;
  const DType* root = read_dtype(in, arena);
  if (!root) return -1;  // not a dtype: reject (keeps it out of the corpus)
  std::vector<MsgIn> msgs;
  msgs.push_back(read_message(in));

  std::vector<int> fields;
  const bool by_field = (flags & 2) && root->kind == Kind::Struct;
  if (by_field)
    for (size_t i = 0; i < root->children.size(); i++) fields.push_back(int(i));
  ColCheck check = [&](const Col& c, const DType& d) { check_col(c, d, string_view); };
  std::vector<MsgOut> out = decode_messages(msgs, root, message_limits(), by_field ? &fields : nullptr,
                                            string_view, threads, &check);
  static const bool verbose = std::getenv("VX_FUZZ_VERBOSE") != nullptr;
  for (MsgOut& o : out) {
    if (verbose) {
      size_t native = 0;
      for (ArrowArray* a : o.cols) native += a != nullptr;
      std::fprintf(stderr, "%s: %s %s\n", dtype_repr(*root).c_str(),
                   o.error ? "error" : cat(native, "/", o.cols.size(), " columns native").c_str(), o.msg.c_str());
    }
    if (o.error) {
      if (o.kind < 1 || o.kind > 4) bug("an error of unknown kind", o.msg);
      continue;
    }
    if (o.cols.size() != (by_field ? fields.size() : 1)) bug("wrong number of columns");
    for (ArrowArray* a : o.cols)
      if (a && (!a->release || a->length < 0)) bug("an exported array without release or length");
  }
  return 0;  // `out` releases every exported array (as Python's capsules would)
}
