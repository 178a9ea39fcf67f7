// Cortex-M helpers shared by the Arduino ports: the DWT cycle counter
// (ARMv7-M and ARMv8-M Mainline: M3, M4, M7, M33) and stack painting.
// Registers are addressed directly (ARMv7-M Architecture Reference Manual,
// C1.8 DWT and C1.6 Debug), so no device header is needed.
#ifndef MCUNAS_CORTEX_M_H_
#define MCUNAS_CORTEX_M_H_

#include <stddef.h>
#include <stdint.h>

namespace mcunas {
namespace cortex_m {

constexpr uintptr_t kDemcr = 0xE000EDFCu;      // Debug Exception and Monitor Control
constexpr uintptr_t kDwtCtrl = 0xE0001000u;    // DWT control
constexpr uintptr_t kDwtCyccnt = 0xE0001004u;  // DWT cycle counter
constexpr uintptr_t kDwtLar = 0xE0001FB0u;     // lock access (Cortex-M7 needs the key)
constexpr uintptr_t kCpuid = 0xE000ED00u;      // CPUID: implementer, part number (B3.2.3)
constexpr uintptr_t kCcr = 0xE000ED14u;        // CCR: IC (bit 17) and DC (bit 16) on M7/M55/M85
constexpr uint32_t kPaint = 0xA5A5A5A5u;       // stack paint word
constexpr size_t kPaintMargin = 256;           // bytes kept clear below the live frame

inline volatile uint32_t& reg(uintptr_t address) {
  return *reinterpret_cast<volatile uint32_t*>(address);
}

// Starts the DWT cycle counter; false if this core has none (e.g. Cortex-M0+).
inline bool dwt_start() {
  reg(kDemcr) |= (1u << 24);  // TRCENA
  if (reg(kDwtCtrl) & (1u << 25)) return false;  // NOCYCCNT
  reg(kDwtLar) = 0xC5ACCE55u;
  reg(kDwtCyccnt) = 0;
  reg(kDwtCtrl) |= 1u;  // CYCCNTENA
  const uint32_t a = reg(kDwtCyccnt);
  for (volatile int i = 0; i < 16; ++i) {
  }
  return reg(kDwtCyccnt) != a;
}

inline uint32_t dwt_cycles() { return reg(kDwtCyccnt); }

// Address just below the caller's frame, less a margin for the calls it makes.
__attribute__((noinline)) inline uintptr_t stack_pointer_estimate() {
  volatile uint32_t marker = 0;
  return reinterpret_cast<uintptr_t>(&marker);
}

// Fills [lo, sp - margin) with the paint word; returns the painted top.
__attribute__((noinline)) inline uintptr_t paint(uintptr_t lo) {
  const uintptr_t top = (stack_pointer_estimate() - kPaintMargin) & ~uintptr_t(3);
  lo = (lo + 3) & ~uintptr_t(3);
  for (uintptr_t p = lo; p < top; p += 4) *reinterpret_cast<volatile uint32_t*>(p) = kPaint;
  return top;
}

// Lowest address at or above lo whose paint was overwritten (top if none).
inline uintptr_t first_dirty(uintptr_t lo, uintptr_t top) {
  lo = (lo + 3) & ~uintptr_t(3);
  for (uintptr_t p = lo; p < top; p += 4) {
    if (*reinterpret_cast<volatile uint32_t*>(p) != kPaint) return p;
  }
  return top;
}

}  // namespace cortex_m
}  // namespace mcunas

#endif  // MCUNAS_CORTEX_M_H_
