// Serial, arena and entry points shared by the Arduino-based ports
// (stm32duino, Arduino-mbed on nRF52840 and RP2040). Include once, from the
// port file, after defining the port's timer and stack functions.
#ifndef MCUNAS_ARDUINO_COMMON_H_
#define MCUNAS_ARDUINO_COMMON_H_

#include <Arduino.h>
#include <stdlib.h>

#include "config.h"
#include "port.h"
#include "runner.h"

namespace mcunas {

constexpr uint32_t kSerialWaitMs = 3000;  // wait this long for a USB CDC host at boot
constexpr size_t kArenaStep = 4096;       // shrink the arena by this much until malloc succeeds

void port_write(const char* data, size_t len) {
  Serial.write(reinterpret_cast<const uint8_t*>(data), len);
}

int port_read_byte() { return Serial.available() > 0 ? Serial.read() : -1; }

void port_idle() { delay(2); }

void port_marker(bool high) {
#if MCUNAS_MARKER_PIN >= 0
  static bool ready = false;
  if (!ready) {
    pinMode(MCUNAS_MARKER_PIN, OUTPUT);
    ready = true;
  }
  digitalWrite(MCUNAS_MARKER_PIN, high ? HIGH : LOW);
#else
  (void)high;
#endif
}

uint64_t port_micros() {
  static uint32_t last = 0;
  static uint64_t high = 0;
  const uint32_t now = micros();
  if (now < last) high += 0x100000000ull;
  last = now;
  return high + now;
}

// The arena is heap memory, not .bss, so the ELF's static RAM is the
// firmware's own; the largest block up to the budget is taken.
uint8_t* port_alloc_arena(size_t want, size_t* got) {
  for (size_t size = want & ~size_t(15); size >= kArenaStep; size -= kArenaStep) {
    void* block = malloc(size);
    if (block != nullptr) {
      *got = size;
      return static_cast<uint8_t*>(block);
    }
  }
  *got = 0;
  return nullptr;
}

void serial_begin() {
  Serial.begin(MCUNAS_BAUD);
  const uint32_t start = millis();
  while (!Serial && millis() - start < kSerialWaitMs) {
  }
}

}  // namespace mcunas

void setup() {
  mcunas::port_init();
  mcunas::runner_begin();
}

void loop() { mcunas::runner_poll(); }

#endif  // MCUNAS_ARDUINO_COMMON_H_
