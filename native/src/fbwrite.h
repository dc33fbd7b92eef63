// Writing the flatbuffers of a message: the Message header and an Array message's Array
// table. The native twins of vortex_io/_ipc/schema.encode_message_header and
// encode_array_fb, which stay the reference: the same bytes, byte for byte (this builder
// follows the Python `flatbuffers.Builder` step by step: back to front, the same alignment
// padding, the same vtable sharing), so a stream is identical whichever core wrote it.
//
// The input is the writer's own (not read off the wire); it is still checked: sizes that
// do not fit the format's fields are errors, never truncated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vx::fbw {

// ArrayStats (vortex_io/_stats.py): empty strings for absent min/max/sum (the reference
// writes no vector for an empty one either)
struct StatsIn {
  std::string min, max, sum;
  bool min_exact = false, max_exact = false;
  std::optional<bool> is_sorted, is_strict_sorted, is_constant;
  std::optional<uint64_t> null_count, uncompressed_size_in_bytes, nan_count;
};

// A FlatNode (vortex_io/_ipc/schema.py)
struct NodeIn {
  uint16_t encoding = 0;
  std::string metadata;
  std::vector<uint16_t> buffers;
  std::vector<NodeIn> children;
  std::optional<StatsIn> stats;
};

// One entry of the Array table's buffer vector: (padding, alignment exponent, length)
struct BufferSpec {
  uint16_t padding;
  uint8_t alignment_exponent;
  uint32_t length;
};

std::string array_fb(const NodeIn& root, const std::vector<BufferSpec>& buffers);

struct MessageIn {
  uint8_t type = 1;  // MessageType: 1 Array, 2 Buffer, 3 DType
  uint64_t body_size = 0;
  uint32_t row_count = 0;
  std::vector<std::string> encodings;
  uint8_t alignment_exponent = 0;
  bool has_metadata = false;  // the pairs (and the record) are written when set
  std::vector<std::pair<std::string, std::string>> metadata;
  std::optional<std::string> record;  // the integrity record, the last pair under record_key
  std::string record_key;
};

std::string message_fb(const MessageIn& m);

}  // namespace vx::fbw
