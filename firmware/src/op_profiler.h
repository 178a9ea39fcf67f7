// Per-op timing from TFLite Micro's profiler hook.
//
// TFLite Micro wraps every op's Invoke in BeginEvent(op name)/EndEvent. This
// subclasses the profiler *interface* rather than tflite::MicroProfiler,
// whose fixed 4096-event log costs ~48 KB of RAM and whose clock
// (tflite::GetCurrentTimeTicks) is a stub on several ports; it accumulates
// ticks of the port's cycle counter per op index instead (a few KB).
#ifndef MCUNAS_OP_PROFILER_H_
#define MCUNAS_OP_PROFILER_H_

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "tensorflow/lite/micro/micro_profiler_interface.h"

namespace mcunas {

class OpProfiler : public tflite::MicroProfilerInterface {
 public:
  uint32_t BeginEvent(const char* tag) override;
  void EndEvent(uint32_t event_handle) override;

  void set_enabled(bool enabled) { enabled_ = enabled; }
  // Call before each profiled Invoke: op events restart at index 0.
  void start_invoke() {
    next_ = 0;
    depth_ = 0;
  }
  void reset();

  size_t count() const { return count_; }
  bool truncated() const { return truncated_; }
  const char* tag(size_t i) const { return tags_[i]; }
  uint64_t ticks(size_t i) const { return ticks_[i]; }

 private:
  static const uint32_t kIgnored = 0xFFFFFFFFu;
  const char* tags_[MCUNAS_MAX_OPS] = {};
  uint64_t ticks_[MCUNAS_MAX_OPS] = {};
  uint32_t start_ = 0;
  size_t next_ = 0;
  size_t count_ = 0;
  int depth_ = 0;
  bool enabled_ = false;
  bool truncated_ = false;
};

}  // namespace mcunas

#endif  // MCUNAS_OP_PROFILER_H_
