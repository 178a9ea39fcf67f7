// The front-end graph as the harness runs it: mcunas's chain of signal ops
// (mcunas/frontend/graph.py), each op's options read from its flexbuffer and
// its constant inputs (window weights, filter bank tables, PCAN gain table).
#ifndef MSIG_HARNESS_CHAIN_H_
#define MSIG_HARNESS_CHAIN_H_

#include <stddef.h>
#include <stdint.h>

#include "../src/signal/signal_kernels.h"

namespace msig_harness {

constexpr uint32_t kMaxConstants = 5;
constexpr int kMaxOps = 9;

struct OpSpec {
  const char* name;
  uint32_t name_len;
  const uint8_t* options;
  uint32_t options_len;
  uint32_t constants;
  uint32_t counts[kMaxConstants];
  const int16_t* data[kMaxConstants];
};

enum class Kind { kWindow, kAutoScale, kRfft, kEnergy, kFilterBank, kSqrt, kSubtraction, kPcan, kLog };

class Chain {
 public:
  // Adds the next op of the graph; nullptr, or what is wrong with it.
  const char* add(const OpSpec& spec);
  // Checks the chain against the frame and band counts and allocates buffers.
  const char* finish(uint32_t frame_samples, uint32_t bands);
  void reset();
  void run(const int16_t* frame, int16_t* features);
  void print_ticks() const;
  // Frees what finish() allocated.
  void release();

 private:
  void step(Kind kind);

  Kind kinds_[kMaxOps] = {};
  int count_ = 0;
  uint64_t ticks_[kMaxOps] = {};
  int n_ = 0, bands_ = 0, shift_ = 0;
  msig::WindowOptions window_ = {};
  const int16_t* weights_ = nullptr;
  uint32_t weight_count_ = 0;
  msig::RfftOptions rfft_options_ = {};
  msig::Rfft fft_ = {};
  msig::EnergyOptions energy_ = {};
  msig::FilterBankOptions bank_ = {};
  msig::FilterBankTables tables_ = {};
  uint32_t table_counts_[kMaxConstants] = {};
  msig::SubtractionOptions subtraction_ = {};
  msig::PcanOptions pcan_ = {};
  const int16_t* lut_ = nullptr;
  msig::LogOptions log_ = {};
  const int16_t* frame_ = nullptr;
  int16_t* samples_ = nullptr;
  msig::Cpx16* spectrum_ = nullptr;
  uint32_t* energy_out_ = nullptr;
  uint64_t* work_ = nullptr;
  uint64_t* mel_ = nullptr;
  uint32_t* root_ = nullptr;
  uint32_t* clean_ = nullptr;
  uint32_t* noise_ = nullptr;
  int16_t* features_ = nullptr;
  void* fft_memory_ = nullptr;
};

}  // namespace msig_harness

#endif  // MSIG_HARNESS_CHAIN_H_
