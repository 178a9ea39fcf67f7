// Port for the Arduino Nano 33 BLE (nRF52840, Cortex-M4F) on the Arduino-mbed
// core. Timer: DWT cycle counter. Stack: the RTX main thread's stack.
#include <Arduino.h>
#include <stddef.h>
#include <stdint.h>

#include "cortex_m.h"
#include "mbed_stack.h"
#include "port.h"

extern "C" {
// mbed OS GCC_ARM linker script symbols.
extern char __data_start__[] __attribute__((weak));
extern char __data_end__[] __attribute__((weak));
extern char __bss_start__[] __attribute__((weak));
extern char __bss_end__[] __attribute__((weak));
extern uint32_t SystemCoreClock;
}

namespace mcunas {

namespace {
bool g_dwt = false;
StackBounds g_stack = {0, 0};
uintptr_t g_paint_top = 0;
}  // namespace

void serial_begin();

void port_init() {
  serial_begin();
  g_dwt = cortex_m::dwt_start();
}

uint32_t port_ticks() { return g_dwt ? cortex_m::dwt_cycles() : micros(); }
uint32_t port_tick_hz() { return g_dwt ? SystemCoreClock : 1000000u; }
const char* port_timer_name() { return g_dwt ? "dwt" : "micros"; }

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
