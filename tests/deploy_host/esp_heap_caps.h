// Host double of the ESP-IDF calls the generated ESP-IDF main.cpp makes.
#ifndef DEPLOY_HOST_ESP_HEAP_CAPS_H_
#define DEPLOY_HOST_ESP_HEAP_CAPS_H_
#include <stdlib.h>
#define MALLOC_CAP_INTERNAL (1 << 11)
#define MALLOC_CAP_8BIT (1 << 2)
inline void* heap_caps_aligned_alloc(size_t alignment, size_t size, unsigned caps) {
  (void)caps;
  return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
#endif
