// Port for the Raspberry Pi Pico (RP2040, Cortex-M0+) on the Arduino-mbed
// core. The M0+ has no DWT cycle counter: the RP2040's own 1 MHz timer
// (TIMERAWL, RP2040 datasheet 4.6.5) is read instead; SysTick would wrap
// every 16.7 M cycles. Stack: the RTX main thread's stack.
#include <Arduino.h>
#include <stddef.h>
#include <stdint.h>

#include "cortex_m.h"
#include "mbed_stack.h"
#include "port.h"

extern "C" {
extern char __data_start__[] __attribute__((weak));
extern char __data_end__[] __attribute__((weak));
extern char __bss_start__[] __attribute__((weak));
extern char __bss_end__[] __attribute__((weak));
}

namespace mcunas {

namespace {
constexpr uintptr_t kTimerRawL = 0x40054028u;  // TIMER_BASE + TIMERAWL
StackBounds g_stack = {0, 0};
uintptr_t g_paint_top = 0;
}  // namespace

void serial_begin();

void port_init() { serial_begin(); }

uint32_t port_ticks() { return cortex_m::reg(kTimerRawL); }
uint32_t port_tick_hz() { return 1000000u; }
const char* port_timer_name() { return "rp2040_timer"; }

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

#include "arduino_common.h"
