// Host double of the Arduino calls the generated Arduino main.cpp makes.
#ifndef DEPLOY_HOST_ARDUINO_H_
#define DEPLOY_HOST_ARDUINO_H_

#include <stdint.h>
#include <stdio.h>

struct HostSerial {
  void begin(unsigned long baud) { printf("serial %lu\n", baud); }
  void println(const char* text) { printf("%s\n", text); }
  explicit operator bool() const { return true; }
};
inline HostSerial Serial;
inline unsigned long micros() {
  static unsigned long now = 0;
  return now += 7;
}
inline unsigned long millis() { return micros() / 1000; }
inline void delay(unsigned long) {}

#endif  // DEPLOY_HOST_ARDUINO_H_
