// Timer functions of the Arduino ports on DWT-capable cores (Cortex-M4/M7:
// STM32 Nucleo, nRF52840): the DWT cycle counter, falling back to micros()
// if the core has none. Include once, from the port file (as
// arduino_common.h).
#ifndef MCUNAS_DWT_TIMER_H_
#define MCUNAS_DWT_TIMER_H_

#include <Arduino.h>
#include <stdint.h>

#include "cortex_m.h"
#include "port.h"

extern "C" {
extern uint32_t SystemCoreClock;  // CMSIS system_<device>.c
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

#endif  // MCUNAS_DWT_TIMER_H_
