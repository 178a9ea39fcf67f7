// The platform layer: one port_<family>.cc implements these for each family
// (esp-idf, stm32 Arduino, nRF52 Arduino-mbed, RP2040 Arduino-mbed).
// Everything else in firmware/src is portable C++17.
#ifndef MCUNAS_PORT_H_
#define MCUNAS_PORT_H_

#include <stddef.h>
#include <stdint.h>

namespace mcunas {

// Open the serial line at MCUNAS_BAUD and start the timers.
void port_init();
// Write bytes to the serial line (blocking until queued).
void port_write(const char* data, size_t len);
// Next received byte, or -1 when nothing is waiting (never blocks long).
int port_read_byte();
// Called while polling for commands: sleep or yield a few milliseconds.
void port_idle();

// Free-running 32-bit counter (core cycles where the core has one) and its rate.
uint32_t port_ticks();
uint32_t port_tick_hz();
// Name of the counter, reported in the result line ("dwt", "esp_cpu", ...).
const char* port_timer_name();
// Monotonic microseconds that do not wrap within a run (coarse check on port_ticks).
uint64_t port_micros();

// Allocate the tensor arena: up to `want` bytes, less if the heap's largest
// block is smaller; the size obtained goes to *got. nullptr if nothing usable.
uint8_t* port_alloc_arena(size_t want, size_t* got);

// Paint the unused part of the current stack, then report how many bytes of
// the stack were ever used (high-water mark) since the paint.
void port_stack_paint();
size_t port_stack_used();

// .data + .bss of the firmware from linker symbols, 0 when unknown.
size_t port_static_ram();

// The energy marker: drive MCUNAS_MARKER_PIN high (true) or low around the timed
// invokes, for a power meter's logic input. No-op when MCUNAS_MARKER_PIN < 0.
void port_marker(bool high);

}  // namespace mcunas

#endif  // MCUNAS_PORT_H_
