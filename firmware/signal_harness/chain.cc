#include "chain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ticks.h"

namespace msig_harness {

namespace {

struct Named {
  const char* name;
  Kind kind;
  uint32_t constants;
};

const Named kOps[] = {
    {"SignalWindow", Kind::kWindow, 1},
    {"SignalFftAutoScale", Kind::kAutoScale, 0},
    {"SignalRfft", Kind::kRfft, 0},
    {"SignalEnergy", Kind::kEnergy, 0},
    {"SignalFilterBank", Kind::kFilterBank, 5},
    {"SignalFilterBankSquareRoot", Kind::kSqrt, 0},
    {"SignalFilterBankSpectralSubtraction", Kind::kSubtraction, 0},
    {"SignalPCAN", Kind::kPcan, 1},
    {"SignalFilterBankLog", Kind::kLog, 0},
};

const char* parse(Kind kind, const OpSpec& s, void* out) {
  switch (kind) {
    case Kind::kWindow:
      return msig::parse_window(s.options, s.options_len, static_cast<msig::WindowOptions*>(out));
    case Kind::kRfft:
      return msig::parse_rfft(s.options, s.options_len, static_cast<msig::RfftOptions*>(out));
    case Kind::kEnergy:
      return msig::parse_energy(s.options, s.options_len, static_cast<msig::EnergyOptions*>(out));
    case Kind::kFilterBank:
      return msig::parse_filter_bank(s.options, s.options_len,
                                     static_cast<msig::FilterBankOptions*>(out));
    case Kind::kSubtraction:
      return msig::parse_subtraction(s.options, s.options_len,
                                     static_cast<msig::SubtractionOptions*>(out));
    case Kind::kPcan:
      return msig::parse_pcan(s.options, s.options_len, static_cast<msig::PcanOptions*>(out));
    case Kind::kLog:
      return msig::parse_log(s.options, s.options_len, static_cast<msig::LogOptions*>(out));
    default:
      return nullptr;
  }
}

template <typename T>
T* zeroed(size_t n) {
  return static_cast<T*>(calloc(n ? n : 1, sizeof(T)));
}

}  // namespace

const char* Chain::add(const OpSpec& s) {
  const Named* op = nullptr;
  for (const Named& n : kOps) {
    if (strlen(n.name) == s.name_len && memcmp(n.name, s.name, s.name_len) == 0) op = &n;
  }
  if (op == nullptr) return "not in the signal kernel library";
  if (count_ >= kMaxOps || s.constants != op->constants) return "unexpected inputs";
  void* options[] = {&window_, nullptr, &rfft_options_, &energy_, &bank_, nullptr,
                     &subtraction_, &pcan_, &log_};
  const char* bad = parse(op->kind, s, options[static_cast<int>(op->kind)]);
  if (bad != nullptr) return bad;
  if (op->kind == Kind::kWindow) {
    weights_ = s.data[0];
    weight_count_ = s.counts[0];
  } else if (op->kind == Kind::kFilterBank) {
    tables_ = {s.data[0], s.data[1], s.data[2], s.data[3], s.data[4]};
    memcpy(table_counts_, s.counts, sizeof(table_counts_));
  } else if (op->kind == Kind::kPcan) {
    lut_ = s.data[0];
  }
  kinds_[count_++] = op->kind;
  return nullptr;
}

const char* Chain::finish(uint32_t frame_samples, uint32_t bands) {
  n_ = static_cast<int>(frame_samples);
  bands_ = static_cast<int>(bands);
  const int bins = rfft_options_.fft_length / 2 + 1;
  if (weight_count_ != frame_samples) return "window weights are not one frame long";
  if (n_ > rfft_options_.fft_length) return "frame longer than fft_length";
  if (energy_.end_index > bins) return "end_index past the spectrum";
  if (bank_.num_channels != bands_) return "num_channels differs from the bands";
  const int channels[3] = {static_cast<int>(table_counts_[2]), static_cast<int>(table_counts_[3]),
                           static_cast<int>(table_counts_[4])};
  if (table_counts_[0] != table_counts_[1]) return "weights and unweights differ in length";
  const char* bad = msig::check_filter_bank(tables_, bands_, static_cast<int>(table_counts_[0]),
                                            channels, energy_.start_index, energy_.end_index);
  if (bad != nullptr) return bad;
  const size_t fft_bytes = msig::rfft_bytes(rfft_options_.fft_length);
  fft_memory_ = malloc(fft_bytes);
  if (!msig::rfft_init(&fft_, rfft_options_.fft_length, fft_memory_, fft_bytes)) return "rfft";
  samples_ = zeroed<int16_t>(n_);
  spectrum_ = zeroed<msig::Cpx16>(bins);
  energy_out_ = zeroed<uint32_t>(bins);
  work_ = zeroed<uint64_t>(bands_ + 1);
  mel_ = zeroed<uint64_t>(bands_);
  root_ = zeroed<uint32_t>(bands_);
  clean_ = zeroed<uint32_t>(bands_);
  noise_ = zeroed<uint32_t>(bands_);
  return nullptr;
}

void Chain::release() {
  void* owned[] = {fft_memory_, samples_, spectrum_, energy_out_, work_, mel_, root_, clean_, noise_};
  for (void* p : owned) free(p);
}

void Chain::reset() { memset(noise_, 0, sizeof(uint32_t) * bands_); }

void Chain::step(Kind kind) {
  switch (kind) {
    case Kind::kWindow:
      msig::window(frame_, weights_, n_, window_.shift, samples_);
      break;
    case Kind::kAutoScale:
      shift_ = msig::fft_auto_scale(samples_, n_, samples_);
      break;
    case Kind::kRfft:
      msig::rfft(&fft_, samples_, n_, spectrum_);
      break;
    case Kind::kEnergy:
      msig::energy(spectrum_, energy_.start_index, energy_.end_index, energy_out_);
      break;
    case Kind::kFilterBank:
      msig::filter_bank(tables_, bands_, energy_out_, work_, mel_);
      break;
    case Kind::kSqrt:
      msig::filter_bank_sqrt(mel_, bands_, shift_, root_);
      break;
    case Kind::kSubtraction:
      msig::spectral_subtraction(subtraction_, root_, clean_, noise_);
      break;
    case Kind::kPcan:
      msig::pcan(clean_, noise_, lut_, bands_, pcan_.snr_shift, root_);
      break;
    case Kind::kLog:
      msig::filter_bank_log(root_, bands_, log_.output_scale, log_.input_correction_bits,
                            features_);
      break;
  }
}

void Chain::run(const int16_t* frame, int16_t* features) {
  frame_ = frame;
  features_ = features;
  uint32_t last = ticks_now();
  for (int i = 0; i < count_; ++i) {
    step(kinds_[i]);
    ticks_[i] += ticks_since(&last);
  }
}

void Chain::print_ticks() const {
#if defined(__arm__)
  printf("ops");
  for (int i = 0; i < count_; ++i) printf(" %d", static_cast<int>(kinds_[i]));
  printf("\nticks");
  for (int i = 0; i < count_; ++i) printf(" %llu", static_cast<unsigned long long>(ticks_[i]));
  printf("\n");
#endif
}

}  // namespace msig_harness
