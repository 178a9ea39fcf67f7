// Time on the emulated Cortex-M4F: the SysTick counter, which QEMU run with
// `-icount shift=0` advances from the count of instructions retired (QEMU
// models no cycles). On the host every reading is 0.
#ifndef MSIG_HARNESS_TICKS_H_
#define MSIG_HARNESS_TICKS_H_

#include <stdint.h>
#include <stdio.h>

namespace msig_harness {

#if defined(__arm__)
inline volatile uint32_t& reg(uintptr_t address) { return *reinterpret_cast<volatile uint32_t*>(address); }
constexpr uintptr_t kSysTickCtrl = 0xE000E010, kSysTickLoad = 0xE000E014, kSysTickValue = 0xE000E018;
constexpr uint32_t kSysTickMask = 0x00FFFFFF;

inline void ticks_start() {
  reg(kSysTickLoad) = kSysTickMask;
  reg(kSysTickValue) = 0;
  reg(kSysTickCtrl) = 0x5;  // enabled, processor clock, no interrupt
}
// Ticks since the last reading (the 24-bit counter counts down and wraps; a
// caller reads it often enough that it wraps at most once).
inline uint32_t ticks_since(uint32_t* last) {
  const uint32_t now = reg(kSysTickValue) & kSysTickMask;
  const uint32_t spent = (*last - now) & kSysTickMask;
  *last = now;
  return spent;
}
inline uint32_t ticks_now() { return reg(kSysTickValue) & kSysTickMask; }

// Ticks of `loops` iterations of a two-instruction loop (subs, bne).
inline uint32_t loop_ticks(uint32_t loops) {
  uint32_t last = ticks_now();
  __asm__ volatile(
      "1: subs %0, %0, #1\n"
      "   bne 1b\n"
      : "+r"(loops)
      :
      : "cc");
  return ticks_since(&last);
}

inline void print_calibration() {
  ticks_start();
  const uint32_t loops = 1000000;
  uint32_t total = 0;
  for (int i = 0; i < 4; ++i) total += loop_ticks(loops);
  printf("calibration %lu instructions %lu ticks\n", 8ul * loops, static_cast<unsigned long>(total));
}
#else
inline uint32_t ticks_now() { return 0; }
inline uint32_t ticks_since(uint32_t*) { return 0; }
inline void print_calibration() {}
#endif

}  // namespace msig_harness

#endif  // MSIG_HARNESS_TICKS_H_
