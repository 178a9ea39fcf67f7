/* Reset of the emulated Cortex-M4F: the vector table (initial stack, reset
   handler), the FPU enabled, .data copied from its load address, then newlib's
   semihosting start-up (_start: .bss, heap, argv from the host, main, exit). */
#include <stdint.h>
#include <string.h>

extern uint32_t __stack, __data_load, __data_start, __data_end;
extern void _start(void);
void reset_handler(void);

__attribute__((section(".vectors"), used)) static const uintptr_t vectors[2] = {
    (uintptr_t)&__stack, (uintptr_t)&reset_handler};

void reset_handler(void) {
  *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10, CP11 full access */
  __asm__ volatile("dsb\n isb");
  memcpy(&__data_start, &__data_load, (uintptr_t)&__data_end - (uintptr_t)&__data_start);
  _start();
  for (;;) {
  }
}
