// Host double (ESP-IDF FreeRTOS types).
#ifndef DEPLOY_HOST_FREERTOS_H_
#define DEPLOY_HOST_FREERTOS_H_
#include <stdint.h>
typedef unsigned int UBaseType_t;
typedef uint32_t TickType_t;
typedef void (*TaskFunction_t)(void*);
typedef void* TaskHandle_t;
#define pdMS_TO_TICKS(ms) ((TickType_t)(ms))
#endif
