// The int16 real FFT of the front end, with the fixed-point arithmetic of the
// FFT TFLite Micro's SignalRfft runs (KISS FFT built for 16-bit samples):
//
// - a complex FFT of half the length on the even/odd samples as re/im, by
//   decimation in time, radix 4 while the length allows and one radix-2 stage
//   last, each stage dividing its inputs by the radix first (x * (32767 / r)
//   in Q15 with rounding) so the result never overflows;
// - twiddles cos/sin(-2 pi k / n) as round-half-up(32767 * value);
// - the split into the real signal's spectrum with the twiddles of
//   -pi ((k + 1) / n + 1/2), halving each output.
//
// Products are Q15 with rounding: (a * b + 2^14) >> 15 in 32 bits; sums are
// stored back into 16 bits (wrapping, as the reference's do).
#include <math.h>

#include "signal_kernels.h"

namespace msig {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int32_t kQ15Max = 32767;

inline int16_t q15_round(int32_t x) { return static_cast<int16_t>((x + (1 << 14)) >> 15); }

inline Cpx16 mul(Cpx16 a, Cpx16 b) {
  return {q15_round(a.re * b.re - a.im * b.im), q15_round(a.re * b.im + a.im * b.re)};
}

inline void divide(Cpx16* c, int32_t radix) {
  const int32_t k = kQ15Max / radix;
  c->re = q15_round(c->re * k);
  c->im = q15_round(c->im * k);
}

inline Cpx16 add(Cpx16 a, Cpx16 b) {
  return {static_cast<int16_t>(a.re + b.re), static_cast<int16_t>(a.im + b.im)};
}

inline Cpx16 sub(Cpx16 a, Cpx16 b) {
  return {static_cast<int16_t>(a.re - b.re), static_cast<int16_t>(a.im - b.im)};
}

inline Cpx16 unit(double phase) {
  return {static_cast<int16_t>(floor(.5 + kQ15Max * cos(phase))),
          static_cast<int16_t>(floor(.5 + kQ15Max * sin(phase)))};
}

// One radix-2 stage over `m` pairs; twiddle k * stride.
void radix2(Cpx16* x, size_t stride, const Cpx16* tw, size_t m) {
  for (size_t k = 0; k < m; ++k) {
    Cpx16* a = x + k;
    Cpx16* b = a + m;
    divide(a, 2);
    divide(b, 2);
    const Cpx16 t = mul(*b, tw[k * stride]);
    *b = sub(*a, t);
    *a = add(*a, t);
  }
}

// One radix-4 stage over `m` quadruples (forward transform).
void radix4(Cpx16* x, size_t stride, const Cpx16* tw, size_t m) {
  for (size_t k = 0; k < m; ++k) {
    Cpx16* q0 = x + k;
    Cpx16* q1 = q0 + m;
    Cpx16* q2 = q1 + m;
    Cpx16* q3 = q2 + m;
    divide(q0, 4);
    divide(q1, 4);
    divide(q2, 4);
    divide(q3, 4);
    const Cpx16 t1 = mul(*q1, tw[k * stride]);
    const Cpx16 t2 = mul(*q2, tw[2 * k * stride]);
    const Cpx16 t3 = mul(*q3, tw[3 * k * stride]);
    const Cpx16 diff02 = sub(*q0, t2);
    *q0 = add(*q0, t2);
    const Cpx16 sum13 = add(t1, t3);
    const Cpx16 diff13 = sub(t1, t3);
    *q2 = sub(*q0, sum13);
    *q0 = add(*q0, sum13);
    q1->re = static_cast<int16_t>(diff02.re + diff13.im);
    q1->im = static_cast<int16_t>(diff02.im - diff13.re);
    q3->re = static_cast<int16_t>(diff02.re - diff13.im);
    q3->im = static_cast<int16_t>(diff02.im + diff13.re);
  }
}

// The complex FFT of `n` points read from `in` every `stride` (stride: how far
// apart this sub-transform's inputs lie in the full one, also its twiddle step).
void transform(Cpx16* out, const Cpx16* in, size_t n, size_t stride, const Cpx16* tw) {
  const size_t radix = (n % 4 == 0) ? 4 : 2;
  const size_t m = n / radix;
  if (m == 1) {
    for (size_t k = 0; k < radix; ++k) out[k] = in[k * stride];
  } else {
    for (size_t k = 0; k < radix; ++k) transform(out + k * m, in + k * stride, m, stride * radix, tw);
  }
  if (radix == 4) {
    radix4(out, stride, tw, m);
  } else {
    radix2(out, stride, tw, m);
  }
}

inline size_t align4(size_t n) { return (n + 3u) & ~static_cast<size_t>(3u); }

}  // namespace

size_t rfft_bytes(int32_t fft_length) {
  if (fft_length < 8 || fft_length > 4096 || (fft_length & (fft_length - 1)) != 0) return 0;
  const size_t half = static_cast<size_t>(fft_length) / 2;
  return sizeof(Cpx16) * (half + half / 2 + half) + align4(sizeof(int16_t) * fft_length);
}

bool rfft_init(Rfft* fft, int32_t fft_length, void* memory, size_t bytes) {
  const size_t need = rfft_bytes(fft_length);
  if (need == 0 || memory == nullptr || bytes < need) return false;
  const int32_t half = fft_length / 2;
  fft->fft_length = fft_length;
  fft->twiddles = static_cast<Cpx16*>(memory);
  fft->split_twiddles = fft->twiddles + half;
  fft->work = fft->split_twiddles + half / 2;
  fft->padded = reinterpret_cast<int16_t*>(fft->work + half);
  for (int32_t i = 0; i < half; ++i) fft->twiddles[i] = unit(-2 * kPi * i / half);
  for (int32_t i = 0; i < half / 2; ++i) {
    fft->split_twiddles[i] = unit(-kPi * (static_cast<double>(i + 1) / half + .5));
  }
  return true;
}

void rfft(Rfft* fft, const int16_t* in, int n, Cpx16* out) {
  const int32_t len = fft->fft_length, half = len / 2;
  for (int32_t i = 0; i < len; ++i) fft->padded[i] = i < n ? in[i] : 0;
  // Even samples as real parts, odd ones as imaginary: a half-length complex FFT.
  transform(fft->work, reinterpret_cast<const Cpx16*>(fft->padded), static_cast<size_t>(half), 1,
            fft->twiddles);
  Cpx16 dc = fft->work[0];
  divide(&dc, 2);
  out[0] = {static_cast<int16_t>(dc.re + dc.im), 0};
  out[half] = {static_cast<int16_t>(dc.re - dc.im), 0};
  for (int32_t k = 1; k <= half / 2; ++k) {
    Cpx16 a = fft->work[k];
    Cpx16 b = {fft->work[half - k].re, static_cast<int16_t>(-fft->work[half - k].im)};
    divide(&a, 2);
    divide(&b, 2);
    const Cpx16 even = add(a, b);
    const Cpx16 t = mul(sub(a, b), fft->split_twiddles[k - 1]);
    out[k] = {static_cast<int16_t>((even.re + t.re) >> 1), static_cast<int16_t>((even.im + t.im) >> 1)};
    out[half - k] = {static_cast<int16_t>((even.re - t.re) >> 1),
                     static_cast<int16_t>((t.im - even.im) >> 1)};
  }
}

}  // namespace msig
