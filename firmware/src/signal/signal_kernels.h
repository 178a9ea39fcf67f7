// The audio front end's signal kernels, portable C++ with no TFLite Micro header.
//
// Each op of mcunas's front-end graph (mcunas/frontend/graph.py) is one plain
// function over arrays, with the integer arithmetic of TFLite Micro's signal
// library so that its outputs are the same bit for bit:
//
//   SignalWindow                        msig_window
//   SignalFftAutoScale                  msig_fft_auto_scale
//   SignalRfft (int16)                  msig_rfft_init / msig_rfft
//   SignalEnergy                        msig_energy
//   SignalFilterBank                    msig_filter_bank
//   SignalFilterBankSquareRoot          msig_filter_bank_sqrt
//   SignalFilterBankSpectralSubtraction msig_spectral_subtraction
//   SignalPCAN                          msig_pcan
//   SignalFilterBankLog                 msig_filter_bank_log
//
// The ops' options come as the graph's flexbuffer maps (custom_options);
// msig_parse_* read them by key and refuse values out of range with a message.
// tflm_signal_ops.cc registers the ops with a TFLite Micro op resolver; the
// bit-exactness tests (tests/frontend) and the emulated Cortex-M4F harness
// (firmware/signal_harness/) call these functions directly.
#ifndef MCUNAS_SIGNAL_KERNELS_H_
#define MCUNAS_SIGNAL_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

namespace msig {

struct Cpx16 {
  int16_t re;
  int16_t im;
};

// ---------------------------------------------------------------- options
// The value of `key` in a flexbuffer map of integers and booleans; false when
// the buffer is no such map or the key is absent.
bool flex_int(const uint8_t* buf, size_t len, const char* key, int64_t* out);

struct WindowOptions { int32_t shift; };
struct RfftOptions { int32_t fft_length; };
struct EnergyOptions { int32_t start_index, end_index; };
struct FilterBankOptions { int32_t num_channels; };
struct SubtractionOptions {
  int32_t num_channels;
  uint32_t smoothing, one_minus_smoothing, alternate_smoothing, alternate_one_minus_smoothing;
  uint32_t min_signal_remaining;
  int32_t smoothing_bits, spectral_subtraction_bits;
  bool clamping;
};
struct PcanOptions { int32_t snr_shift; };
struct LogOptions { int32_t input_correction_bits, output_scale; };

// Each returns nullptr, or the key of the first option missing or out of range.
const char* parse_window(const uint8_t* buf, size_t len, WindowOptions* out);
const char* parse_rfft(const uint8_t* buf, size_t len, RfftOptions* out);
const char* parse_energy(const uint8_t* buf, size_t len, EnergyOptions* out);
const char* parse_filter_bank(const uint8_t* buf, size_t len, FilterBankOptions* out);
const char* parse_subtraction(const uint8_t* buf, size_t len, SubtractionOptions* out);
const char* parse_pcan(const uint8_t* buf, size_t len, PcanOptions* out);
const char* parse_log(const uint8_t* buf, size_t len, LogOptions* out);

// ---------------------------------------------------------------- kernels
// out[i] = saturate_int16((in[i] * weights[i]) >> shift).
void window(const int16_t* in, const int16_t* weights, int n, int shift, int16_t* out);

// Scales the frame up by the largest power of two that keeps max |x| in int16;
// returns that shift (0 for silence or a full-scale sample).
int32_t fft_auto_scale(const int16_t* in, int n, int16_t* out);

// The real FFT of fft_length int16 samples (a power of two, 8 to 4096) in
// 16-bit fixed point: a radix-4 (and one radix-2) complex FFT of half the
// length, then the real split; every stage scales by 1/radix with rounding.
struct Rfft {
  int32_t fft_length;
  Cpx16* twiddles;        // fft_length / 2
  Cpx16* split_twiddles;  // fft_length / 4
  Cpx16* work;            // fft_length / 2
  int16_t* padded;        // fft_length
};
// Bytes of the tables and buffers an Rfft of fft_length needs (0: not a
// supported length).
size_t rfft_bytes(int32_t fft_length);
// Lays the tables and buffers out in `memory` (rfft_bytes long, 4-byte aligned).
bool rfft_init(Rfft* fft, int32_t fft_length, void* memory, size_t bytes);
// n <= fft_length samples in (zero-padded), fft_length / 2 + 1 bins out.
void rfft(Rfft* fft, const int16_t* in, int n, Cpx16* out);

// out[i] = re^2 + im^2 for start <= i < end (other entries untouched).
void energy(const Cpx16* spectrum, int start, int end, uint32_t* out);

// The triangular filter bank: `num_channels + 1` weighted sums of energies,
// `work` holds them; out gets channels 1..num_channels.
struct FilterBankTables {
  const int16_t* weights;
  const int16_t* unweights;
  const int16_t* frequency_starts;
  const int16_t* weight_starts;
  const int16_t* widths;
};
void filter_bank(const FilterBankTables& t, int num_channels, const uint32_t* energy,
                 uint64_t* work, uint64_t* out);
// nullptr when every channel (num_channels + 1 of them) reads energies within
// [lo, hi) (those the Energy op writes) and weights within the tables (`weight_count` entries each; the
// three per-channel tables hold num_channels + 1), else what is wrong.
const char* check_filter_bank(const FilterBankTables& t, int num_channels, int weight_count,
                              const int channel_counts[3], int lo, int hi);

uint16_t sqrt32(uint32_t x);
uint32_t sqrt64(uint64_t x);
// out[i] = sqrt64(in[i]) >> shift.
void filter_bank_sqrt(const uint64_t* in, int n, int32_t shift, uint32_t* out);

// Noise estimate (state, n entries: zero at a reset) and the signal with it
// subtracted, never below min_signal_remaining of the input.
void spectral_subtraction(const SubtractionOptions& o, const uint32_t* in, uint32_t* out,
                          uint32_t* noise);

// Per-channel gain from the noise estimate (gain table `lut`), then the
// compression of the gained signal; `out` may be `in`.
void pcan(const uint32_t* in, const uint32_t* noise, const int16_t* lut, int n,
          int32_t snr_shift, uint32_t* out);

// ln(x << correction_bits) * output_scale / 65536, as int16 (0 for x <= 1).
uint32_t log32(uint32_t x, uint32_t output_scale);
void filter_bank_log(const uint32_t* in, int n, int32_t output_scale, int32_t correction_bits,
                     int16_t* out);

}  // namespace msig

#endif  // MCUNAS_SIGNAL_KERNELS_H_
