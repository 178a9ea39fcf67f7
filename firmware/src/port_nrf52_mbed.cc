// Port for the Arduino Nano 33 BLE (nRF52840, Cortex-M4F) on the Arduino-mbed
// core. Timer: DWT cycle counter (dwt_timer.h). Stack: the RTX main thread's
// stack (mbed_stack.h).
#include <Arduino.h>
#include <stddef.h>
#include <stdint.h>

#include "dwt_timer.h"
#include "mbed_stack.h"
#include "port.h"

#include "arduino_common.h"
