// The front end's kernels other than the FFT (signal_fft.cc). The arithmetic
// is TFLite Micro's signal library's, step for step: which products are 32 or
// 64 bits wide, where a value is truncated to 16 or 32 bits, how a shift
// rounds. Where the reference computes in signed int32 and may overflow, this
// file computes in uint32 (two's complement wrap), the result the reference's
// compilers produce.
#include "signal_kernels.h"

namespace msig {

namespace {

// The highest set bit, counted from 1; 32 for zero (as the GCC path of the reference).
inline uint32_t msb32(uint32_t x) { return x ? 32u - __builtin_clz(x) : 32u; }
inline uint32_t msb64(uint64_t x) { return x ? 64u - __builtin_clzll(x) : 64u; }

// log2(1 + k / 128) - k / 128 in units of 2^-16, k = 0..128, and one padding
// zero: round((log2(1 + k/128) - k/128) * 65536) (tests/frontend checks the table
// against that formula).
const uint16_t kLog2Correction[130] = {
    0,    224,  442,  654,  861,  1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490,
    2646, 2797, 2944, 3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272,
    4368, 4460, 4549, 4633, 4714, 4791, 4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280,
    5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595, 5610, 5622, 5631, 5637,
    5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470, 5439,
    5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762,
    4697, 4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759, 3668,
    3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207,
    2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963,  830,  695,  559,  421,
    282,  142,  0,    0};

constexpr uint32_t kLnOf2Q16 = 45426;  // ln(2) * 65536
constexpr uint32_t kHalfQ16 = 32768;
constexpr int kPcanSnrBits = 12;
constexpr int kPcanOutputBits = 6;

// The fraction of log2(x) in Q16, where 2^whole <= x: linear, plus the
// correction table interpolated between its 128 segments.
uint32_t log2_fraction(uint32_t x, uint32_t whole) {
  int32_t frac = static_cast<int32_t>(static_cast<int64_t>(x) - (INT64_C(1) << whole));
  if (whole < 16) {
    frac = static_cast<int32_t>(static_cast<uint32_t>(frac) << (16 - whole));
  } else {
    frac >>= whole - 16;
  }
  const uint32_t seg = static_cast<uint32_t>(frac) >> 9;
  const int32_t lo = kLog2Correction[seg];
  const int32_t hi = kLog2Correction[seg + 1];
  const int32_t within = frac - static_cast<int32_t>(seg << 9);
  return static_cast<uint32_t>(frac + lo + (((hi - lo) * within) >> 16));
}

// PCAN's gain table lookup: 4 entries per octave of x, a quadratic in the
// octave's 10-bit position.
int16_t gain_of(uint32_t x, const int16_t* lut) {
  if (x <= 2) return lut[x];
  const int octave = static_cast<int>(msb32(x));
  const int16_t* c = lut + 4 * octave - 6;
  const uint32_t shifted = octave < 11 ? x << (11 - octave) : x >> (octave - 11);
  const int32_t pos = static_cast<int32_t>(shifted & 0x3FF);
  int32_t acc = (static_cast<int32_t>(c[2]) * pos) >> 5;
  acc = static_cast<int32_t>(static_cast<uint32_t>(acc) + (static_cast<uint32_t>(c[1]) << 5));
  acc = static_cast<int32_t>(static_cast<uint32_t>(acc) * static_cast<uint32_t>(pos));
  acc = static_cast<int32_t>(static_cast<uint32_t>(acc) + (1u << 14)) >> 15;
  return static_cast<int16_t>(acc + c[0]);
}

// PCAN's compression of a gained signal (Q12 in, Q6 out): quadratic below 2.0, then linear.
uint32_t shrink(uint32_t x) {
  if (x < (2u << kPcanSnrBits)) return (x * x) >> (2 + 2 * kPcanSnrBits - kPcanOutputBits);
  return (x >> (kPcanSnrBits - kPcanOutputBits)) - (1u << kPcanOutputBits);
}

}  // namespace

void window(const int16_t* in, const int16_t* weights, int n, int shift, int16_t* out) {
  for (int i = 0; i < n; ++i) {
    const int32_t v = (static_cast<int32_t>(in[i]) * weights[i]) >> shift;
    out[i] = static_cast<int16_t>(v < -32768 ? -32768 : (v > 32767 ? 32767 : v));
  }
}

int32_t fft_auto_scale(const int16_t* in, int n, int16_t* out) {
  int16_t peak = 0;  // -32768 stays -32768 (its negation does not fit), as in the reference
  for (int i = 0; i < n; ++i) {
    const int16_t v = in[i];
    if (v > peak) {
      peak = v;
    } else if (-v > peak) {
      peak = static_cast<int16_t>(-v);
    }
  }
  const int32_t bits = 15 - static_cast<int32_t>(msb32(static_cast<uint32_t>(peak)));
  const int32_t shift = bits > 0 ? bits : 0;
  for (int i = 0; i < n; ++i) out[i] = static_cast<int16_t>(in[i] * (1 << shift));
  return shift;
}

void energy(const Cpx16* spectrum, int start, int end, uint32_t* out) {
  for (int i = start; i < end; ++i) {
    const int32_t re = spectrum[i].re, im = spectrum[i].im;
    out[i] = static_cast<uint32_t>(re * re) + static_cast<uint32_t>(im * im);
  }
}

void filter_bank(const FilterBankTables& t, int num_channels, const uint32_t* energy,
                 uint64_t* work, uint64_t* out) {
  // Each FFT bin feeds the rising edge of one channel (weights) and the falling
  // edge of the previous one (unweights): the sums carry over by one channel.
  uint64_t rising = 0, falling = 0;
  for (int c = 0; c <= num_channels; ++c) {
    const int first = t.frequency_starts[c], w0 = t.weight_starts[c];
    for (int j = 0; j < t.widths[c]; ++j) {
      const uint64_t e = energy[first + j];
      rising += static_cast<uint64_t>(static_cast<int64_t>(t.weights[w0 + j])) * e;
      falling += static_cast<uint64_t>(static_cast<int64_t>(t.unweights[w0 + j])) * e;
    }
    work[c] = rising;
    rising = falling;
    falling = 0;
  }
  for (int c = 0; c < num_channels; ++c) out[c] = work[c + 1];
}

uint16_t sqrt32(uint32_t x) {
  if (x == 0) return 0;
  uint32_t root = 0;
  const int top = static_cast<int>(32 - msb32(x)) | 1;
  uint32_t bit = 1u << (31 - top);
  for (int steps = (31 - top) / 2 + 1; steps > 0; --steps) {
    if (x >= root + bit) {
      x -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  if (x > root && root != 0xFFFF) ++root;  // round to nearest
  return static_cast<uint16_t>(root);
}

uint32_t sqrt64(uint64_t x) {
  if ((x >> 32) == 0) return sqrt32(static_cast<uint32_t>(x));
  uint64_t root = 0;
  const int top = static_cast<int>(64 - msb64(x)) | 1;
  uint64_t bit = UINT64_C(1) << (63 - top);
  for (int steps = (63 - top) / 2 + 1; steps > 0; --steps) {
    if (x >= root + bit) {
      x -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  if (x > root && root != 0xFFFFFFFFu) ++root;
  return static_cast<uint32_t>(root);
}

void filter_bank_sqrt(const uint64_t* in, int n, int32_t shift, uint32_t* out) {
  for (int i = 0; i < n; ++i) out[i] = sqrt64(in[i]) >> shift;
}

void spectral_subtraction(const SubtractionOptions& o, const uint32_t* in, uint32_t* out,
                          uint32_t* noise) {
  for (int i = 0; i < o.num_channels; ++i) {
    const bool odd = (i & 1) != 0;
    const uint64_t a = odd ? o.alternate_smoothing : o.smoothing;
    const uint64_t b = odd ? o.alternate_one_minus_smoothing : o.one_minus_smoothing;
    const uint32_t up = in[i] << o.smoothing_bits;
    noise[i] = static_cast<uint32_t>((up * a + noise[i] * b) >> o.spectral_subtraction_bits);
    uint32_t estimate = noise[i];
    if (estimate > up) {
      estimate = up;
      if (o.clamping) noise[i] = estimate;
    }
    const uint32_t floor = static_cast<uint32_t>(
        (static_cast<uint64_t>(in[i]) * o.min_signal_remaining) >> o.spectral_subtraction_bits);
    const uint32_t left = (up - estimate) >> o.smoothing_bits;
    out[i] = left > floor ? left : floor;
  }
}

void pcan(const uint32_t* in, const uint32_t* noise, const int16_t* lut, int n,
          int32_t snr_shift, uint32_t* out) {
  for (int i = 0; i < n; ++i) {
    const uint32_t gain = static_cast<uint32_t>(static_cast<int32_t>(gain_of(noise[i], lut)));
    const uint32_t snr = static_cast<uint32_t>((static_cast<uint64_t>(in[i]) * gain) >> snr_shift);
    out[i] = shrink(snr);
  }
}

uint32_t log32(uint32_t x, uint32_t output_scale) {
  const uint32_t whole = msb32(x) - 1;
  const uint32_t log2 = (whole << 16) + log2_fraction(x, whole);
  const uint32_t ln = static_cast<uint32_t>((static_cast<uint64_t>(kLnOf2Q16) * log2 + kHalfQ16) >> 16);
  return (output_scale * ln + kHalfQ16) >> 16;  // 32-bit product, as the reference
}

void filter_bank_log(const uint32_t* in, int n, int32_t output_scale, int32_t correction_bits,
                     int16_t* out) {
  for (int i = 0; i < n; ++i) {
    const uint32_t x = in[i] << correction_bits;
    if (x > 1) {
      const uint32_t v = log32(x, static_cast<uint32_t>(output_scale));
      out[i] = static_cast<int16_t>(v < 32767u ? v : 32767u);
    } else {
      out[i] = 0;
    }
  }
}

}  // namespace msig
