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

namespace mcunas {

namespace {
constexpr uintptr_t kTimerRawL = 0x40054028u;  // TIMER_BASE + TIMERAWL
}  // namespace

void serial_begin();

void port_init() { serial_begin(); }

uint32_t port_ticks() { return cortex_m::reg(kTimerRawL); }
uint32_t port_tick_hz() { return 1000000u; }
const char* port_timer_name() { return "rp2040_timer"; }

}  // namespace mcunas

#include "arduino_common.h"
