// libFuzzer harness of the message-header reader (message.cpp: parse_message_header, the
// bounds-checked walk of the Message flatbuffer every message starts with). A header that
// parses must describe only bytes inside the input and hold only UTF-8 encoding IDs.
//
// Input: the header bytes.
#include "fuzz_util.h"
#include "message.h"
#include "scalar.h"

using namespace vx;
using namespace vxfuzz;

namespace {
void inside(const Bytes& part, const Bytes& all, const char* what) {
  if (part.n && (part.p < all.p || part.p + part.n > all.p + all.n)) bug(what);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Buf copy = heap_copy(Bytes(data, size));  // exactly `size` bytes: ASan sees any overread
  const Bytes b = copy.bytes();
  MessageHeaderIn h;
  try {
    h = parse_message_header(b);
  } catch (Error&) {
    return 0;
  }
  if (h.version != 0 || h.type < 1 || h.type > 3) bug("parse_message_header: bad version or type");
  for (const Bytes& e : h.encodings) {
    inside(e, b, "parse_message_header: an encoding ID outside the header");
    if (!utf8_valid(e.p, e.n)) bug("parse_message_header: an encoding ID is not UTF-8");
  }
  for (const auto& [k, v] : h.metadata) {
    inside(k, b, "parse_message_header: a metadata key outside the header");
    inside(v, b, "parse_message_header: a metadata value outside the header");
  }
  if (h.has_metadata == h.metadata.empty()) bug("parse_message_header: has_metadata disagrees");
  return 0;
}
