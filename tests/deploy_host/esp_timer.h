// Host double (ESP-IDF): microseconds since boot.
#ifndef DEPLOY_HOST_ESP_TIMER_H_
#define DEPLOY_HOST_ESP_TIMER_H_
#include <stdint.h>
inline int64_t esp_timer_get_time() {
  static int64_t now = 0;
  return now += 7;
}
#endif
