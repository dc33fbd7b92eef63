#include "col.h"

namespace vx {

Buf bitmap_alloc(uint64_t nbits, bool value) {
  size_t nb = bitmap_bytes(nbits);
  Buf b = alloc(nb);
  if (nb) std::memset(b.ptr, value ? 0xFF : 0x00, nb);
  if (value) bitmap_clear_tail(b.ptr, nbits);
  return b;
}

void bitmap_clear_tail(uint8_t* bits, uint64_t n) {
  size_t words = size_t((n + 63) / 64);
  if (!words) return;
  unsigned r = unsigned(n & 63);
  if (r) {
    uint64_t w = load<uint64_t>(bits + 8 * (words - 1));
    w &= (uint64_t(1) << r) - 1;
    std::memcpy(bits + 8 * (words - 1), &w, 8);
  }
}

Buf bitmap_from(const uint8_t* src, uint64_t off, uint64_t n) {
  size_t nb = bitmap_bytes(n);
  Buf out = alloc(nb);
  uint8_t* dst = out.ptr;
  if (nb) std::memset(dst, 0, nb);
  const uint8_t* s = src + (off >> 3);
  unsigned shift = unsigned(off & 7);
  uint64_t nbytes = (n + 7) >> 3;
  if (shift == 0) {
    if (nbytes) std::memcpy(dst, s, nbytes);  // (dst is null for n == 0)
  } else {
    // byte k of the output = bits [8k + shift, 8k + shift + 8) of s
    uint64_t avail = (shift + n + 7) >> 3;  // bytes of s that hold the bits
    for (uint64_t k = 0; k < nbytes; k++) {
      unsigned lo = s[k] >> shift;
      unsigned hi = k + 1 < avail ? unsigned(s[k + 1]) << (8 - shift) : 0u;
      dst[k] = uint8_t(lo | hi);
    }
  }
  bitmap_clear_tail(dst, n);
  return out;
}

uint64_t count_ones(const uint8_t* bits, uint64_t n) {
  uint64_t full = n >> 6;
  uint64_t c = 0;
  for (uint64_t w = 0; w < full; w++) c += uint64_t(__builtin_popcountll(load<uint64_t>(bits + 8 * w)));
  uint64_t done = full << 6;
  for (uint64_t i = done; i < n;) {
    if ((i & 7) == 0 && i + 8 <= n) {
      c += uint64_t(__builtin_popcount(bits[i >> 3]));
      i += 8;
    } else {
      c += get_bit(bits, i);
      i++;
    }
  }
  return c;
}

void pack_bools(const uint8_t* bools, uint64_t n, uint8_t* bits) {
  uint64_t full = n >> 3;
  for (uint64_t k = 0; k < full; k++) {
    uint64_t w = load<uint64_t>(bools + 8 * k);
    // bit j of the result = byte j of w (0/1): gather the low bits
    w &= 0x0101010101010101ull;
    bits[k] = uint8_t((w * 0x0102040810204080ull) >> 56);
  }
  if (n & 7) {
    uint8_t b = 0;
    for (uint64_t i = full << 3; i < n; i++) b |= uint8_t((bools[i] & 1) << (i & 7));
    bits[full] = b;
  }
}

void normalize_validity(Col& c) {
  if (c.validity.empty()) {
    c.null_count = 0;
    return;
  }
  uint64_t ones = count_ones(c.validity.data(), c.len);
  c.null_count = int64_t(c.len - ones);
  if (c.null_count == 0) c.validity = Buf();
}

}  // namespace vx
