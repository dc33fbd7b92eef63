// CRC-32C: a slice-by-8 table loop for any CPU, and the SSE4.2 crc32 instruction run on three
// independent streams that are joined with a "shift by L zero bytes" operator.
//
// Both work on the CRC register (the value with the usual pre- and post-inversion removed).
// The register update is linear over GF(2): feeding bytes B to a register s gives
// Z_|B|(s) ^ R(0, B), where Z_k is "feed k zero bytes" (a fixed linear map of the 32 bits)
// and R(0, B) is B fed to a zero register. So three consecutive blocks A, B, C of L bytes can
// be fed to three registers at once (s, 0, 0: the instruction's 3-cycle latency is hidden,
// one issues per cycle) and joined as Z_L(Z_L(a) ^ b) ^ c. Z_L is tabulated per byte of its
// argument (4 x 256 words), built once from its value on the 32 basis vectors.
#include "crc32c.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu.h"
#include "pool.h"

namespace vx {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli

struct SliceTables {
  uint32_t t[8][256];
  SliceTables() {
    for (uint32_t b = 0; b < 256; b++) {
      uint32_t c = b;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
      t[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
      for (uint32_t b = 0; b < 256; b++) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  }
};

const SliceTables& slice_tables() {
  static const SliceTables tables;  // (thread-safe initialization)
  return tables;
}

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

// the register after feeding p[0..n) to `crc`, eight bytes a step
uint32_t slice8(uint32_t crc, const uint8_t* p, size_t n) {
  const auto& t = slice_tables().t;
  while (n >= 8) {
    uint64_t w = load_le64(p) ^ crc;
    crc = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
          t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = t[0][(crc ^ *p++) & 0xffu] ^ (crc >> 8);
  return crc;
}

// Z_k as tables: shift(x) = t[0][x & 0xff] ^ t[1][(x >> 8) & 0xff] ^ ... (linear in x)
struct ShiftTable {
  uint32_t t[4][256];
  explicit ShiftTable(size_t k) {
    // Z_k on the basis vectors, by feeding k zero bytes (the portable loop: any CPU)
    uint32_t basis[32];
    static const uint8_t zeros[256] = {};
    for (int j = 0; j < 32; j++) {
      uint32_t c = uint32_t(1) << j;
      for (size_t left = k; left;) {
        size_t step = left < sizeof zeros ? left : sizeof zeros;
        c = slice8(c, zeros, step);
        left -= step;
      }
      basis[j] = c;
    }
    for (int byte = 0; byte < 4; byte++)
      for (uint32_t b = 0; b < 256; b++) {
        uint32_t v = 0;
        for (int bit = 0; bit < 8; bit++)
          if (b >> bit & 1u) v ^= basis[8 * byte + bit];
        t[byte][b] = v;
      }
  }
  uint32_t operator()(uint32_t x) const {
    return t[0][x & 0xff] ^ t[1][(x >> 8) & 0xff] ^ t[2][(x >> 16) & 0xff] ^ t[3][x >> 24];
  }
};

constexpr size_t kLong = 8192;  // bytes per stream of a long step (3 x 8 KiB)
constexpr size_t kShort = 256;  // ... of a short one (3 x 256 B)

const ShiftTable& shift_long() {
  static const ShiftTable s(kLong);
  return s;
}
const ShiftTable& shift_short() {
  static const ShiftTable s(kShort);
  return s;
}

// Z_{2^k} for k = 0..63 as 32x32 GF(2) matrices (column j: the image of bit j), each the
// square of the one before (Z_1 from the byte table): Z_n is the product of those of n's bits
struct PowerTables {
  uint32_t m[64][32];
  static uint32_t apply(const uint32_t* mat, uint32_t x) {
    uint32_t v = 0;
    for (int j = 0; x; j++, x >>= 1)
      if (x & 1u) v ^= mat[j];
    return v;
  }
  PowerTables() {
    const auto& t = slice_tables().t;
    for (int j = 0; j < 32; j++) {
      uint32_t e = uint32_t(1) << j;
      m[0][j] = t[0][e & 0xffu] ^ (e >> 8);
    }
    for (int k = 1; k < 64; k++)
      for (int j = 0; j < 32; j++) m[k][j] = apply(m[k - 1], m[k - 1][j]);
  }
};

const PowerTables& power_tables() {
  static const PowerTables p;
  return p;
}

}  // namespace

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  // crc(A + B) = Z_|B|(crc(A)) ^ crc(B) (the inversions cancel: Z is linear)
  const auto& pt = power_tables();
  uint32_t x = crc_a;
  for (int k = 0; len_b; k++, len_b >>= 1)
    if (len_b & 1u) x = PowerTables::apply(pt.m[k], x);
  return x ^ crc_b;
}

uint32_t crc32c_parallel(const uint8_t* p, size_t n, uint32_t value, int threads) {
  constexpr size_t kMinPiece = size_t(1) << 20;
  if (threads > 1 && n / kMinPiece < size_t(threads)) threads = int(n / kMinPiece);
  if (threads <= 1) return crc32c(p, n, value);
  size_t k = size_t(threads);
  size_t piece = (n / k + 63) & ~size_t(63);
  std::vector<uint32_t> crcs(k, 0);
  std::vector<size_t> lens(k, 0);
  parallel_for(k, threads, [&](size_t i) {
    size_t start = std::min(n, i * piece);
    size_t len = std::min(n - start, piece);
    lens[i] = len;
    crcs[i] = crc32c(p + start, len, 0);
  });
  uint32_t c = value;
  for (size_t i = 0; i < k; i++) c = crc32c_combine(c, crcs[i], lens[i]);
  return c;
}

uint32_t crc32c_portable(const uint8_t* p, size_t n, uint32_t value) {
  return ~slice8(~value, p, n);
}

#if defined(VX_HAVE_AVX2_DISPATCH)
namespace {
VX_SSE42_BEGIN
// three streams of `len` bytes from p, joined into c0 (which fed the first)
inline uint64_t three_streams(uint64_t c0, const uint8_t* p, size_t len, const ShiftTable& z) {
  uint64_t c1 = 0, c2 = 0;
  const uint8_t* q = p + len;
  const uint8_t* r = p + 2 * len;
  for (size_t i = 0; i < len; i += 8) {
    c0 = _mm_crc32_u64(c0, load_le64(p + i));
    c1 = _mm_crc32_u64(c1, load_le64(q + i));
    c2 = _mm_crc32_u64(c2, load_le64(r + i));
  }
  uint32_t c = z(uint32_t(c0)) ^ uint32_t(c1);
  return z(c) ^ uint32_t(c2);
}

uint32_t crc_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  while (n && (reinterpret_cast<uintptr_t>(p) & 7)) {
    c = _mm_crc32_u8(uint32_t(c), *p++);
    n--;
  }
  if (n >= 3 * kLong) {
    const ShiftTable& z = shift_long();
    do {
      c = three_streams(c, p, kLong, z);
      p += 3 * kLong;
      n -= 3 * kLong;
    } while (n >= 3 * kLong);
  }
  if (n >= 3 * kShort) {
    const ShiftTable& z = shift_short();
    do {
      c = three_streams(c, p, kShort, z);
      p += 3 * kShort;
      n -= 3 * kShort;
    } while (n >= 3 * kShort);
  }
  for (; n >= 8; p += 8, n -= 8) c = _mm_crc32_u64(c, load_le64(p));
  while (n--) c = _mm_crc32_u8(uint32_t(c), *p++);
  return uint32_t(c);
}
VX_SSE42_END
}  // namespace

bool crc32c_hardware() { return have_sse42(); }

uint32_t crc32c(const uint8_t* p, size_t n, uint32_t value) {
  if (have_sse42()) return ~crc_sse42(~value, p, n);
  return crc32c_portable(p, n, value);
}
#else
bool crc32c_hardware() { return false; }

uint32_t crc32c(const uint8_t* p, size_t n, uint32_t value) { return crc32c_portable(p, n, value); }
#endif

}  // namespace vx
