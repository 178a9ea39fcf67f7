// Small portable helpers of the measurement core (no TFLite Micro, no port).
#ifndef MCUNAS_UTIL_H_
#define MCUNAS_UTIL_H_

#include <stddef.h>
#include <stdint.h>

namespace mcunas {

// CRC-32 as zlib computes it (reflected polynomial 0xEDB88320).
uint32_t crc32(const uint8_t* data, size_t len);
// Median of n values; sorts `values` in place.
uint32_t median_u32(uint32_t* values, size_t n);

}  // namespace mcunas

#endif  // MCUNAS_UTIL_H_
