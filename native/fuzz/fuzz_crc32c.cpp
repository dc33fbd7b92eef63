// libFuzzer harness of CRC-32C (crc32c.cpp): the dispatching kernel (SSE4.2 on three
// interleaved streams where the CPU has it) and the portable slice-by-8 tables against a
// bit-at-a-time definition, on exact-size heap copies at every start alignment, and the
// continuation rule crc32c(b, crc32c(a)) == crc32c(a + b) at a cut the input picks.
//
// Input: u16 cut, u8 start shift (& 7), u32 initial value, then the bytes. Inputs are
// repeated up to 3 x 8 KiB x 2 + a few hundred bytes (the long and short blocks).
// Standalone: clang++ -fsanitize=fuzzer,address,undefined -Inative/src native/fuzz/fuzz_crc32c.cpp native/src/crc32c.cpp
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "crc32c.h"

namespace {

uint32_t bitwise(const uint8_t* p, size_t n, uint32_t value) {
  uint32_t c = ~value;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

[[noreturn]] void bug(const char* what, size_t n, uint32_t a, uint32_t b) {
  std::fprintf(stderr, "\n*** crc32c fuzz harness: %s (n=%zu: %08x vs %08x)\n", what, n, a, b);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 7) return 0;
  size_t cut = size_t(data[0]) | size_t(data[1]) << 8;
  size_t shift = data[2] & 7;
  uint32_t value;
  std::memcpy(&value, data + 3, 4);
  const uint8_t* body = data + 7;
  size_t n = size - 7;
  // repeat short inputs so the three-stream blocks are reached too
  std::vector<uint8_t> grown(body, body + n);
  if (n && (data[2] & 0x80))
    while (grown.size() < 3 * 8192 * 2 + 300) grown.insert(grown.end(), body, body + n);
  n = grown.size();
  // an exact-size heap block at the chosen misalignment (ASan sees any overrun)
  uint8_t* block = static_cast<uint8_t*>(std::malloc(n + shift ? n + shift : 1));
  uint8_t* p = block + shift;
  if (n) std::memcpy(p, grown.data(), n);
  uint32_t want = bitwise(p, n, value);
  uint32_t hw = vx::crc32c(p, n, value);
  if (hw != want) bug("crc32c differs from the definition", n, hw, want);
  uint32_t sw = vx::crc32c_portable(p, n, value);
  if (sw != want) bug("crc32c_portable differs from the definition", n, sw, want);
  if (n) {
    size_t k = cut % (n + 1);
    uint32_t joined = vx::crc32c(p + k, n - k, vx::crc32c(p, k, value));
    if (joined != want) bug("continuation differs", n, joined, want);
  }
  std::free(block);
  return 0;
}
