// Stack bounds of the current thread on Arduino-mbed cores (mbed OS, RTX5):
// Arduino's loop() runs in mbed's main thread, whose stack RTX knows.
#ifndef MCUNAS_MBED_STACK_H_
#define MCUNAS_MBED_STACK_H_

#include <stdint.h>

#include "cmsis_os2.h"
#include "rtx_os.h"

namespace mcunas {

struct StackBounds {
  uintptr_t lo;
  uintptr_t hi;
};

inline StackBounds current_thread_stack() {
  const osRtxThread_t* thread = reinterpret_cast<const osRtxThread_t*>(osThreadGetId());
  const uintptr_t lo = reinterpret_cast<uintptr_t>(thread->stack_mem);
  // Skip RTX's stack magic word at the bottom (overflow check).
  return StackBounds{lo + 8, lo + thread->stack_size};
}

}  // namespace mcunas

#endif  // MCUNAS_MBED_STACK_H_
