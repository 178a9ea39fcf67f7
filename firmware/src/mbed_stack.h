// Stack and static RAM for the Arduino-mbed cores (mbed OS, RTX5): Arduino's
// loop() runs in mbed's main thread, whose stack RTX knows. Defines the port's
// stack and static-RAM functions; include once, from the port file (as
// arduino_common.h), in the nRF52840 and RP2040 ports.
#ifndef MCUNAS_MBED_STACK_H_
#define MCUNAS_MBED_STACK_H_

#include <stddef.h>
#include <stdint.h>

#include "cmsis_os2.h"
#include "cortex_m.h"
#include "port.h"
#include "rtx_os.h"

extern "C" {
// mbed OS GCC_ARM linker script symbols.
extern char __data_start__[] __attribute__((weak));
extern char __data_end__[] __attribute__((weak));
extern char __bss_start__[] __attribute__((weak));
extern char __bss_end__[] __attribute__((weak));
}

namespace mcunas {

struct StackBounds {
  uintptr_t lo;
  uintptr_t hi;
};

inline StackBounds current_thread_stack() {
  const osRtxThread_t* thread = reinterpret_cast<const osRtxThread_t*>(osThreadGetId());
  const uintptr_t lo = reinterpret_cast<uintptr_t>(thread->stack_mem);
  // Skip RTX's stack magic word at the bottom (overflow check).
  return StackBounds{lo + 8, lo + thread->stack_size};
}

namespace {
StackBounds g_stack = {0, 0};
uintptr_t g_paint_top = 0;
}  // namespace

void port_stack_paint() {
  g_stack = current_thread_stack();
  g_paint_top = cortex_m::paint(g_stack.lo);
}

size_t port_stack_used() {
  if (g_paint_top <= g_stack.lo) return 0;
  return g_stack.hi - cortex_m::first_dirty(g_stack.lo, g_paint_top);
}

size_t port_static_ram() {
  if (__data_start__ == nullptr || __bss_end__ == nullptr) return 0;
  return static_cast<size_t>((__data_end__ - __data_start__) + (__bss_end__ - __bss_start__));
}

}  // namespace mcunas

#endif  // MCUNAS_MBED_STACK_H_
