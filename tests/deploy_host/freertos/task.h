// Host double (ESP-IDF FreeRTOS tasks): records the task; the test calls nothing.
#ifndef DEPLOY_HOST_FREERTOS_TASK_H_
#define DEPLOY_HOST_FREERTOS_TASK_H_
#include <stdio.h>
#include "freertos/FreeRTOS.h"
inline int xTaskCreate(TaskFunction_t fn, const char* name, uint32_t stack, void* arg,
                       UBaseType_t priority, TaskHandle_t* handle) {
  (void)fn, (void)arg, (void)handle;
  printf("task %s stack %u priority %u\n", name, (unsigned)stack, priority);
  return 1;
}
inline void vTaskDelay(TickType_t ticks) { (void)ticks; }
#endif
