// Port for STM32 Nucleo boards on the stm32duino Arduino core (Cortex-M4/M7).
// Timer: DWT cycle counter. Stack: the main stack sits at the top of RAM
// (_estack) and grows down towards the heap, so the gap between the heap's
// break and the live stack is painted.
#include <Arduino.h>
#include <stddef.h>
#include <stdint.h>

#include "cortex_m.h"
#include "dwt_timer.h"
#include "port.h"

extern "C" {
// stm32duino linker script (variant ldscript.ld) and syscalls.c.
extern char _estack[];
extern char _sdata[] __attribute__((weak));
extern char _edata[] __attribute__((weak));
extern char _sbss[] __attribute__((weak));
extern char _ebss[] __attribute__((weak));
void* _sbrk(ptrdiff_t increment);
}

namespace mcunas {

namespace {
uintptr_t g_paint_lo = 0;
uintptr_t g_paint_top = 0;
}  // namespace

void port_stack_paint() {
  g_paint_lo = reinterpret_cast<uintptr_t>(_sbrk(0)) + 64;
  g_paint_top = cortex_m::paint(g_paint_lo);
}

size_t port_stack_used() {
  if (g_paint_top <= g_paint_lo) return 0;
  return reinterpret_cast<uintptr_t>(_estack) - cortex_m::first_dirty(g_paint_lo, g_paint_top);
}

size_t port_static_ram() {
  if (_sdata == nullptr || _ebss == nullptr) return 0;
  return static_cast<size_t>((_edata - _sdata) + (_ebss - _sbss));
}

}  // namespace mcunas

#include "arduino_common.h"
