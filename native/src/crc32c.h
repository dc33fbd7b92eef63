// CRC-32C (Castagnoli, the iSCSI / ext4 / SSE4.2 polynomial 0x1EDC6F41, reflected 0x82F63B78),
// the checksum of vortex_io's integrity layout (vortex_io/integrity.py).
//
// crc32c(p, n, value) continues a CRC: crc32c(b, crc32c(a)) == crc32c(a + b), and
// crc32c(p, n, 0) is the standard CRC-32C of the bytes (0xE3069283 for "123456789").
#pragma once

#include <cstddef>
#include <cstdint>

namespace vx {
// the SSE4.2 crc32 instruction where the CPU has it (three interleaved streams), else
// crc32c_portable
uint32_t crc32c(const uint8_t* p, size_t n, uint32_t value = 0);
// slice-by-8 tables, any CPU
uint32_t crc32c_portable(const uint8_t* p, size_t n, uint32_t value = 0);
// true when crc32c uses the instruction
bool crc32c_hardware();
// crc32c(a + b) from crc32c(a), crc32c(b) and len(b)
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
// crc32c on up to `threads` threads of the pool (large buffers cut into pieces, joined with
// crc32c_combine); the same value as crc32c
uint32_t crc32c_parallel(const uint8_t* p, size_t n, uint32_t value, int threads);
}  // namespace vx
