// Port for ESP32, ESP32-S3 (Xtensa) and ESP32-C3 (RISC-V) on ESP-IDF 5.x with
// Espressif's esp-tflite-micro component (ESP-NN kernels).
// Timer: esp_cpu_get_cycle_count(). Stack: the measurement runs in its own
// FreeRTOS task of MCUNAS_STACK_BYTES; uxTaskGetStackHighWaterMark gives the
// least free stack it ever had (bytes on ESP-IDF).
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "driver/gpio.h"
#include "driver/uart.h"
#include "esp_cpu.h"
#include "esp_heap_caps.h"
#include "esp_timer.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#include "port.h"
#include "runner.h"
#include "sdkconfig.h"

extern "C" {
// ESP-IDF sections.ld: internal DRAM data and bss.
extern char _data_start[] __attribute__((weak));
extern char _data_end[] __attribute__((weak));
extern char _bss_start[] __attribute__((weak));
extern char _bss_end[] __attribute__((weak));
}

namespace mcunas {

namespace {
constexpr int kTaskPriority = 5;
constexpr size_t kUartRxBuffer = 256;
constexpr TickType_t kPollTicks = pdMS_TO_TICKS(10);
bool g_uart_driver = false;
}  // namespace

void port_init() {
#if defined(CONFIG_ESP_CONSOLE_UART) && defined(CONFIG_ESP_CONSOLE_UART_NUM)
  // The console UART keeps its baud from sdkconfig (115200); the driver is
  // installed only to read commands with a timeout.
  g_uart_driver = uart_driver_install(static_cast<uart_port_t>(CONFIG_ESP_CONSOLE_UART_NUM),
                                      kUartRxBuffer, 0, 0, nullptr, 0) == ESP_OK;
#endif
  setvbuf(stdout, nullptr, _IOFBF, 256);
}

void port_write(const char* data, size_t len) {
  fwrite(data, 1, len, stdout);
  if (len > 0 && data[len - 1] == '\n') fflush(stdout);
}

int port_read_byte() {
#if defined(CONFIG_ESP_CONSOLE_UART) && defined(CONFIG_ESP_CONSOLE_UART_NUM)
  if (g_uart_driver) {
    uint8_t c = 0;
    const int n = uart_read_bytes(static_cast<uart_port_t>(CONFIG_ESP_CONSOLE_UART_NUM), &c, 1,
                                  kPollTicks);
    return n == 1 ? c : -1;
  }
#endif
  const int c = getchar();  // USB-Serial-JTAG console: non-blocking VFS read
  if (c == EOF) clearerr(stdin);
  return c == EOF ? -1 : c;
}

void port_idle() {
  if (!g_uart_driver) vTaskDelay(kPollTicks);
}

void port_marker(bool high) {
#if MCUNAS_MARKER_PIN >= 0
  static bool ready = false;
  const gpio_num_t pin = static_cast<gpio_num_t>(MCUNAS_MARKER_PIN);
  if (!ready) {
    gpio_reset_pin(pin);
    gpio_set_direction(pin, GPIO_MODE_OUTPUT);
    ready = true;
  }
  gpio_set_level(pin, high ? 1 : 0);
#else
  (void)high;
#endif
}

uint32_t port_ticks() { return static_cast<uint32_t>(esp_cpu_get_cycle_count()); }
uint32_t port_tick_hz() { return CONFIG_ESP_DEFAULT_CPU_FREQ_MHZ * 1000000u; }
const char* port_timer_name() { return "esp_cpu"; }
uint64_t port_micros() { return static_cast<uint64_t>(esp_timer_get_time()); }

// Internal 8-bit-capable RAM only (not PSRAM): the largest block up to the budget.
uint8_t* port_alloc_arena(size_t want, size_t* got) {
  const uint32_t caps = MALLOC_CAP_INTERNAL | MALLOC_CAP_8BIT;
  size_t size = heap_caps_get_largest_free_block(caps);
  if (size > want) size = want;
  size &= ~size_t(15);
  void* block = size ? heap_caps_aligned_alloc(16, size, caps) : nullptr;
  *got = block ? size : 0;
  return static_cast<uint8_t*>(block);
}

void port_stack_paint() {}  // FreeRTOS paints task stacks at creation

size_t port_stack_used() {
  const UBaseType_t free_bytes = uxTaskGetStackHighWaterMark(nullptr);
  return MCUNAS_STACK_BYTES > free_bytes ? MCUNAS_STACK_BYTES - free_bytes : 0;
}

size_t port_static_ram() {
  if (_data_start == nullptr || _bss_end == nullptr) return 0;
  return static_cast<size_t>((_data_end - _data_start) + (_bss_end - _bss_start));
}

namespace {
void measurement_task(void*) {
  port_init();
  runner_begin();
  for (;;) runner_poll();
}
}  // namespace

}  // namespace mcunas

extern "C" void app_main(void) {
  xTaskCreate(mcunas::measurement_task, "mcunas", MCUNAS_STACK_BYTES, nullptr,
              mcunas::kTaskPriority, nullptr);
}
