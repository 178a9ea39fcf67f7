// Port for the Arduino Nano 33 BLE (nRF52840, Cortex-M4F) on the Arduino-mbed
// core. Timer: DWT cycle counter. Stack: the RTX main thread's stack.
#include <Arduino.h>
#include <stddef.h>
#include <stdint.h>

#include "cortex_m.h"
#include "mbed_stack.h"
#include "port.h"

extern "C" {
extern uint32_t SystemCoreClock;
}

namespace mcunas {

namespace {
bool g_dwt = false;
}  // namespace

void serial_begin();

void port_init() {
  serial_begin();
  g_dwt = cortex_m::dwt_start();
}

uint32_t port_ticks() { return g_dwt ? cortex_m::dwt_cycles() : micros(); }
uint32_t port_tick_hz() { return g_dwt ? SystemCoreClock : 1000000u; }
const char* port_timer_name() { return g_dwt ? "dwt" : "micros"; }

}  // namespace mcunas

#include "arduino_common.h"
