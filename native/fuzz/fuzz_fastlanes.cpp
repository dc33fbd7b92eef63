// libFuzzer harness of the FastLanes bit-unpack kernels (fastlanes.h): every type and bit
// width, arbitrary words, offsets and lengths, each unpacked value checked against a
// reference read off the lane's bit stream and against the random-access unpack_one.
//
// Input: u8 type (& 3: u8, u16, u32, u64), u8 width (mod W + 1), u16 offset (mod 1024),
// u16 length, u64 reference (added, wrapping), then the packed words (as many whole
// chunks of 128 * width bytes as there are; the length is cut to fit).
#include <vector>

#include "fastlanes.h"
#include "fuzz_util.h"

using namespace vx;
using namespace vxfuzz;

namespace {

constexpr uint64_t kMaxChunks = 3;  // enough for offsets and lengths across chunks

// value at chunk position `pos` of a chunk, read straight off lane l's bit stream: the
// row's b bits start at bit row * b of the stream, whose word k is chunk[nl * k + lane];
// they lie in at most two consecutive words (shifts and masks in u64, independent of the
// kernels' unrolled code)
template <class T>
T reference(const T* chunk, int b, unsigned row, unsigned lane) {
  constexpr unsigned w = fl::W<T>, nl = fl::LANES<T>;
  if (b == 0) return 0;
  const unsigned g = row * unsigned(b), k = g / w, s = g % w;
  uint64_t v = uint64_t(chunk[nl * k + lane]) >> s;
  if (s + unsigned(b) > w) v |= uint64_t(chunk[nl * (k + 1) + lane]) << (w - s);
  const uint64_t mask = b == 64 ? ~uint64_t(0) : (uint64_t(1) << b) - 1;
  return T(v & mask);
}

template <class T>
void run(Input& in, unsigned width_byte) {
  constexpr int w = fl::W<T>;
  constexpr unsigned nl = fl::LANES<T>;
  const int b = int(width_byte % unsigned(w + 1));
  const uint64_t offset = in.le<uint16_t>() % 1024;
  uint64_t n = in.le<uint16_t>();
  const T ref = T(in.le<uint64_t>());
  Bytes words = in.rest();
  const size_t per = size_t(1024 * b / w);  // words per chunk
  uint64_t nchunks = (offset + n + 1023) / 1024;
  if (b) nchunks = std::min<uint64_t>(nchunks, words.n / (per * sizeof(T)));
  nchunks = std::min(nchunks, kMaxChunks);
  n = std::min(n, nchunks * 1024 > offset ? nchunks * 1024 - offset : 0);
  // exact-size copies: a read past the chunk's words is an ASan report
  std::vector<T> packed(size_t(nchunks) * per);
  if (!packed.empty()) std::memcpy(packed.data(), words.p, packed.size() * sizeof(T));
  std::vector<T> out(size_t(nchunks) * 1024);
  auto fn = fl::unpacker<T>(b);
  for (uint64_t ch = 0; ch < nchunks; ch++) fn(packed.data() + ch * per, out.data() + ch * 1024, ref);
  for (uint64_t ch = 0; ch < nchunks; ch++) {
    const T* chunk = packed.data() + ch * per;
    for (unsigned row = 0; row < unsigned(w); row++)
      for (unsigned lane = 0; lane < nl; lane++) {
        unsigned pos = unsigned(fl::FL_ORDER[row / 8]) * 16 + (row % 8) * 128 + lane;
        T want = T(reference<T>(chunk, b, row, lane) + ref);
        if (out[ch * 1024 + pos] != want)
          bug("unpack_chunk differs from the reference read off the lane's bit stream", cat("T=u", w, " b=", b, " pos=", pos));
        unsigned r2, l2;
        fl::row_lane<T>(pos, &r2, &l2);
        if (r2 != row || l2 != lane) bug("row_lane is not the layout's inverse", cat("pos=", pos));
      }
  }
  // random access at [offset, offset + n), as bitpacked take does
  for (uint64_t i = 0; i < n; i++) {
    uint64_t pos = offset + i;
    T got = T(fl::unpack_one<T>(packed.data() + (pos >> 10) * per, b, unsigned(pos & 1023)) + ref);
    if (got != out[size_t(pos)]) bug("unpack_one differs from unpack_chunk", cat("T=u", w, " b=", b, " pos=", pos));
  }
}

bool transpose_is_a_permutation() {
  std::vector<bool> seen(1024, false);
  for (unsigned i = 0; i < 1024; i++) {
    unsigned t = fl::transpose_index(i);
    if (t >= 1024 || seen[t]) return false;
    seen[t] = true;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool transpose_ok = transpose_is_a_permutation();
  if (!transpose_ok) bug("transpose_index is not a permutation of 0..1023");
  Input in{data, size};
  unsigned t = in.u8() & 3;
  unsigned width = in.u8();
  switch (t) {
    case 0: run<uint8_t>(in, width); break;
    case 1: run<uint16_t>(in, width); break;
    case 2: run<uint32_t>(in, width); break;
    default: run<uint64_t>(in, width); break;
  }
  return 0;
}
