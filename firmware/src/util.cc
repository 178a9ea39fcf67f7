#include "util.h"

namespace mcunas {

uint32_t crc32(const uint8_t* data, size_t len) {
  static const uint32_t kNibble[16] = {
      0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
      0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
      0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu};
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < len; ++i) {
    crc ^= data[i];
    crc = (crc >> 4) ^ kNibble[crc & 15];
    crc = (crc >> 4) ^ kNibble[crc & 15];
  }
  return crc ^ 0xFFFFFFFFu;
}

uint32_t median_u32(uint32_t* values, size_t n) {
  for (size_t i = 1; i < n; ++i) {  // insertion sort: n <= MCUNAS_MAX_RUNS
    const uint32_t v = values[i];
    size_t j = i;
    for (; j > 0 && values[j - 1] > v; --j) values[j] = values[j - 1];
    values[j] = v;
  }
  if (n == 0) return 0;
  return n % 2 ? values[n / 2] : static_cast<uint32_t>((uint64_t(values[n / 2 - 1]) + values[n / 2]) / 2);
}

}  // namespace mcunas
