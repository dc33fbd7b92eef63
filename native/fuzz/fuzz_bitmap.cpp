// libFuzzer harness of the bitmap and predicate-mask kernels (col.h, kernels.h: bitmap_from,
// count_ones, pack_bools, bitmap_clear_tail, mask_and / mask_or / mask_not, mask_count,
// mask_positions, with_validity), each checked bit by bit against the definitions
// (SQL three-valued logic for masks).
//
// Input: u16 n (mod 1024), u8 bit offset (& 7) and mask shapes, then the bytes bitmaps are
// cut from (two values and two validities, each exactly as long as its contract says).
#include <functional>
#include <vector>

#include "fuzz_util.h"
#include "kernels.h"

using namespace vx;
using namespace vxfuzz;

namespace {

// `nbytes` exact bytes from the input (zeros past its end) in a heap block of that size
Buf bytes_from(Input& in, size_t nbytes) {
  Bytes b = in.take(nbytes);
  Buf out = alloc(nbytes);
  if (nbytes) {
    std::memset(out.ptr, 0, nbytes);
    std::memcpy(out.ptr, b.p, b.n);
  }
  return out;
}

bool bit(const Buf& b, uint64_t i) { return b.empty() ? true : get_bit(b.data(), i); }

// a mask of n rows: values (false under nulls), validity optional, buffers of the exact
// byte length or whole words with garbage past n
Mask make_mask(Input& in, uint64_t n, uint8_t shape) {
  Mask m;
  m.len = n;
  size_t nb = (shape & 1) ? bitmap_bytes(n) : size_t((n + 7) / 8);
  m.vals = bytes_from(in, nb);
  if (shape & 2) {
    m.valid = bytes_from(in, nb);
    for (size_t i = 0; i < nb; i++) m.vals.ptr[i] &= m.valid.ptr[i];
  }
  return m;
}

// (value, valid) of row i
std::pair<bool, bool> row(const Mask& m, uint64_t i) {
  bool ok = bit(m.valid, i);
  return {ok && get_bit(m.vals.data(), i), ok};
}

void check_mask(const Mask& got, uint64_t n, const char* what, const std::function<std::pair<bool, bool>(uint64_t)>& want) {
  if (got.len != n) bug(what, "length");
  if (got.vals.len < (n + 7) / 8 || (!got.valid.empty() && got.valid.len < (n + 7) / 8)) bug(what, "short bitmap");
  touch(got.vals);
  touch(got.valid);
  for (uint64_t i = 0; i < n; i++) {
    auto [v, ok] = want(i);
    auto [gv, gok] = row(got, i);
    if (gok != ok || (ok && gv != v)) bug(what, cat("row ", i));
    if (!gok && gv) bug(what, cat("a null row with a true value at ", i));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  const uint64_t n = in.le<uint16_t>() % 1024;
  const uint8_t sel = in.u8();
  const uint64_t off = sel & 7;

  // bitmap_from: bits [off, off + n) of exactly ceil((off + n) / 8) bytes
  Buf src = bytes_from(in, size_t((off + n + 7) / 8));
  Buf bm = bitmap_from(src.data(), off, n);
  if (bm.len < bitmap_bytes(n)) bug("bitmap_from: short output");
  uint64_t ones = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (get_bit(bm.data(), i) != get_bit(src.data(), off + i)) bug("bitmap_from", cat("bit ", i));
    ones += get_bit(bm.data(), i);
  }
  for (uint64_t i = n; i < 8 * uint64_t(bm.len); i++)
    if (get_bit(bm.data(), i)) bug("bitmap_from: a bit past n is set");
  if (count_ones(bm.data(), n) != ones) bug("count_ones");
  // count_ones on the caller's byte-exact bitmap (no whole words)
  if (off == 0 && count_ones(src.data(), n) != ones) bug("count_ones on a byte-exact bitmap");

  // pack_bools: n bytes -> bits
  Buf bools = bytes_from(in, size_t(n));
  Buf packed = alloc_zeroed(size_t((n + 7) / 8));
  pack_bools(bools.data(), n, packed.ptr);
  for (uint64_t i = 0; i < n; i++)
    if (get_bit(packed.data(), i) != bool(bools.data()[i] & 1)) bug("pack_bools", cat("bit ", i));

  // masks
  Mask a = make_mask(in, n, uint8_t(sel >> 3));
  Mask b = make_mask(in, n, uint8_t(sel >> 5));
  check_mask(mask_and(a, b), n, "mask_and", [&](uint64_t i) {
    auto [x, xo] = row(a, i);
    auto [y, yo] = row(b, i);
    bool ok = (xo && yo) || (xo && !x) || (yo && !y);
    return std::pair<bool, bool>{x && y, ok};
  });
  check_mask(mask_or(a, b), n, "mask_or", [&](uint64_t i) {
    auto [x, xo] = row(a, i);
    auto [y, yo] = row(b, i);
    bool ok = (xo && yo) || (xo && x) || (yo && y);
    return std::pair<bool, bool>{x || y, ok};
  });
  check_mask(mask_not(a), n, "mask_not", [&](uint64_t i) {
    auto [x, xo] = row(a, i);
    return std::pair<bool, bool>{!x, xo};
  });
  uint64_t kept = 0;
  Positions pos = mask_positions(a);
  for (uint64_t i = 0; i < n; i++) {
    auto [x, xo] = row(a, i);
    if (x && xo) {
      if (kept >= pos.size() || pos[kept] != i) bug("mask_positions", cat("row ", i));
      kept++;
    }
  }
  if (kept != pos.size()) bug("mask_positions: extra positions");
  if (mask_count(a) != kept) bug("mask_count");
  // with_validity: values and'ed with a validity (an owned copy: it writes in place)
  if (!b.valid.empty()) {
    Buf vals = copy_of(b.vals.data(), b.vals.len);
    Buf okb = copy_of(b.valid.data(), b.valid.len);
    Mask w = with_validity(vals, okb, n);
    check_mask(w, n, "with_validity", [&](uint64_t i) { return row(b, i); });
  }
  return 0;
}
