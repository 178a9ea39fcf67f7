#include "op_profiler.h"

#include "port.h"

namespace mcunas {

void OpProfiler::reset() {
  for (size_t i = 0; i < MCUNAS_MAX_OPS; ++i) {
    tags_[i] = nullptr;
    ticks_[i] = 0;
  }
  count_ = 0;
  next_ = 0;
  depth_ = 0;
  truncated_ = false;
}

uint32_t OpProfiler::BeginEvent(const char* tag) {
  if (!enabled_) return kIgnored;
  if (depth_++ > 0) return kIgnored;  // nested event: counted in its parent op
  if (next_ >= MCUNAS_MAX_OPS) {
    truncated_ = true;
    return kIgnored;
  }
  const size_t index = next_++;
  tags_[index] = tag;
  if (index >= count_) count_ = index + 1;
  start_ = port_ticks();
  return static_cast<uint32_t>(index);
}

void OpProfiler::EndEvent(uint32_t event_handle) {
  const uint32_t now = port_ticks();
  if (!enabled_) return;
  if (depth_ > 0) --depth_;
  if (event_handle == kIgnored || event_handle >= MCUNAS_MAX_OPS) return;
  ticks_[event_handle] += static_cast<uint32_t>(now - start_);
}

}  // namespace mcunas
