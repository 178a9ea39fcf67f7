// The TFLite Micro side of mcunas's signal kernels: options parsed at Init,
// tensor types and sizes checked at Prepare, the kernels called at Eval. Built
// only with a TFLite Micro whose resolver lacks the signal ops (the Cortex-M
// Arduino library); ESP-IDF builds use esp-tflite-micro's own kernels.
#if !defined(ESP_PLATFORM)

#include "tflm_signal_ops.h"

#include <string.h>

#include "signal_kernels.h"
#include "tensorflow/lite/micro/kernels/kernel_util.h"
#include "tensorflow/lite/micro/micro_context.h"
#include "tensorflow/lite/micro/micro_log.h"

namespace mcunas_signal {

namespace {

using tflite::micro::GetEvalInput;
using tflite::micro::GetEvalOutput;
using tflite::micro::GetTensorData;

constexpr int kPcanLutMin = 125;  // the gain lookup reads up to entry 4 * 32 - 6 + 2

// Every op's user data starts with the option that was out of range (or nullptr).
struct Base {
  const char* bad;
  const char* op;
};
template <typename Options>
struct State {
  Base base;
  Options options;
};

int count_of(const TfLiteIntArray* dims) {
  int n = 1;
  for (int i = 0; i < dims->size; ++i) n *= dims->data[i];
  return n;
}

TfLiteStatus fail(const char* op, const char* what) {
  MicroPrintf("%s: %s (mcunas signal kernels)", op, what);
  return kTfLiteError;
}

// The type and element count of input or output `index` (count -1: none).
int tensor_count(TfLiteContext* ctx, TfLiteNode* node, bool input, int index, TfLiteType type) {
  tflite::MicroContext* mc = tflite::GetMicroContext(ctx);
  TfLiteTensor* t = input ? mc->AllocateTempInputTensor(node, index)
                          : mc->AllocateTempOutputTensor(node, index);
  if (t == nullptr) return -1;
  const int n = t->type == type ? count_of(t->dims) : -1;
  mc->DeallocateTempTfLiteTensor(t);
  return n;
}

template <typename Options, const char* (*Parse)(const uint8_t*, size_t, Options*)>
void* init_with(TfLiteContext* ctx, const char* buffer, size_t length, const char* op) {
  auto* s = static_cast<State<Options>*>(ctx->AllocatePersistentBuffer(ctx, sizeof(State<Options>)));
  if (s == nullptr) return nullptr;
  memset(s, 0, sizeof(*s));
  s->base.op = op;
  s->base.bad = Parse(reinterpret_cast<const uint8_t*>(buffer), length, &s->options);
  return s;
}

TfLiteStatus check_options(TfLiteNode* node, const char* op) {
  const Base* b = static_cast<const Base*>(node->user_data);
  if (b == nullptr) return fail(op, "no memory for its options");
  if (b->bad != nullptr) {
    MicroPrintf("%s: option %s missing or out of range (mcunas signal kernels)", op, b->bad);
    return kTfLiteError;
  }
  return kTfLiteOk;
}

template <typename Options>
const Options& options_of(TfLiteNode* node) {
  return static_cast<const State<Options>*>(node->user_data)->options;
}

// ---------------------------------------------------------------- Window
constexpr char kWindow[] = "SignalWindow";
void* window_init(TfLiteContext* c, const char* b, size_t n) {
  return init_with<msig::WindowOptions, msig::parse_window>(c, b, n, kWindow);
}
TfLiteStatus window_prepare(TfLiteContext* c, TfLiteNode* node) {
  TF_LITE_ENSURE_OK(c, check_options(node, kWindow));
  const int n = tensor_count(c, node, true, 0, kTfLiteInt16);
  if (node->inputs->size != 2 || node->outputs->size != 1 || n <= 0 ||
      tensor_count(c, node, true, 1, kTfLiteInt16) != n ||
      tensor_count(c, node, false, 0, kTfLiteInt16) != n) {
    return fail(kWindow, "needs int16 samples and weights of one length, int16 out");
  }
  return kTfLiteOk;
}
TfLiteStatus window_eval(TfLiteContext* c, TfLiteNode* node) {
  const TfLiteEvalTensor* in = GetEvalInput(c, node, 0);
  msig::window(GetTensorData<int16_t>(in), GetTensorData<int16_t>(GetEvalInput(c, node, 1)),
               count_of(in->dims), options_of<msig::WindowOptions>(node).shift,
               GetTensorData<int16_t>(GetEvalOutput(c, node, 0)));
  return kTfLiteOk;
}

// ---------------------------------------------------------------- FftAutoScale
constexpr char kAutoScale[] = "SignalFftAutoScale";
TfLiteStatus auto_scale_prepare(TfLiteContext* c, TfLiteNode* node) {
  const int n = tensor_count(c, node, true, 0, kTfLiteInt16);
  if (node->inputs->size != 1 || node->outputs->size != 2 || n <= 0 ||
      tensor_count(c, node, false, 0, kTfLiteInt16) != n ||
      tensor_count(c, node, false, 1, kTfLiteInt32) != 1) {
    return fail(kAutoScale, "needs int16 samples in, int16 samples and an int32 shift out");
  }
  return kTfLiteOk;
}
TfLiteStatus auto_scale_eval(TfLiteContext* c, TfLiteNode* node) {
  const TfLiteEvalTensor* in = GetEvalInput(c, node, 0);
  *GetTensorData<int32_t>(GetEvalOutput(c, node, 1)) =
      msig::fft_auto_scale(GetTensorData<int16_t>(in), count_of(in->dims),
                           GetTensorData<int16_t>(GetEvalOutput(c, node, 0)));
  return kTfLiteOk;
}

// ---------------------------------------------------------------- Rfft
constexpr char kRfft[] = "SignalRfft";
struct RfftState {
  Base base;
  msig::RfftOptions options;
  msig::Rfft fft;
};
void* rfft_init(TfLiteContext* c, const char* b, size_t n) {
  auto* s = static_cast<RfftState*>(c->AllocatePersistentBuffer(c, sizeof(RfftState)));
  if (s == nullptr) return nullptr;
  memset(s, 0, sizeof(*s));
  s->base.op = kRfft;
  s->base.bad = msig::parse_rfft(reinterpret_cast<const uint8_t*>(b), n, &s->options);
  if (s->base.bad != nullptr) return s;
  const size_t bytes = msig::rfft_bytes(s->options.fft_length);
  void* memory = c->AllocatePersistentBuffer(c, bytes);
  if (!msig::rfft_init(&s->fft, s->options.fft_length, memory, bytes)) s->base.bad = "fft_length";
  return s;
}
TfLiteStatus rfft_prepare(TfLiteContext* c, TfLiteNode* node) {
  TF_LITE_ENSURE_OK(c, check_options(node, kRfft));
  const int length = options_of<msig::RfftOptions>(node).fft_length;
  const int n = tensor_count(c, node, true, 0, kTfLiteInt16);
  if (node->inputs->size != 1 || node->outputs->size != 1 || n <= 0 || n > length ||
      tensor_count(c, node, false, 0, kTfLiteInt16) != 2 * (length / 2 + 1)) {
    return fail(kRfft, "needs int16 samples (at most fft_length), int16 bins out");
  }
  return kTfLiteOk;
}
TfLiteStatus rfft_eval(TfLiteContext* c, TfLiteNode* node) {
  auto* s = static_cast<RfftState*>(node->user_data);
  const TfLiteEvalTensor* in = GetEvalInput(c, node, 0);
  msig::rfft(&s->fft, GetTensorData<int16_t>(in), count_of(in->dims),
             reinterpret_cast<msig::Cpx16*>(GetTensorData<int16_t>(GetEvalOutput(c, node, 0))));
  return kTfLiteOk;
}

// ---------------------------------------------------------------- Energy
constexpr char kEnergy[] = "SignalEnergy";
void* energy_init(TfLiteContext* c, const char* b, size_t n) {
  return init_with<msig::EnergyOptions, msig::parse_energy>(c, b, n, kEnergy);
}
TfLiteStatus energy_prepare(TfLiteContext* c, TfLiteNode* node) {
  TF_LITE_ENSURE_OK(c, check_options(node, kEnergy));
  const int n = tensor_count(c, node, true, 0, kTfLiteInt16);
  const int bins = tensor_count(c, node, false, 0, kTfLiteUInt32);
  if (node->inputs->size != 1 || node->outputs->size != 1 || n <= 0 || n != 2 * bins ||
      options_of<msig::EnergyOptions>(node).end_index > bins) {
    return fail(kEnergy, "needs int16 bins in, uint32 energies out, end_index within them");
  }
  return kTfLiteOk;
}
TfLiteStatus energy_eval(TfLiteContext* c, TfLiteNode* node) {
  const msig::EnergyOptions& o = options_of<msig::EnergyOptions>(node);
  msig::energy(reinterpret_cast<const msig::Cpx16*>(GetTensorData<int16_t>(GetEvalInput(c, node, 0))),
               o.start_index, o.end_index, GetTensorData<uint32_t>(GetEvalOutput(c, node, 0)));
  return kTfLiteOk;
}

// ---------------------------------------------------------------- FilterBank
constexpr char kFilterBank[] = "SignalFilterBank";
struct BankState {
  Base base;
  msig::FilterBankOptions options;
  uint64_t* work;
  bool checked;
};
void* bank_init(TfLiteContext* c, const char* b, size_t n) {
  auto* s = static_cast<BankState*>(c->AllocatePersistentBuffer(c, sizeof(BankState)));
  if (s == nullptr) return nullptr;
  memset(s, 0, sizeof(*s));
  s->base.op = kFilterBank;
  s->base.bad = msig::parse_filter_bank(reinterpret_cast<const uint8_t*>(b), n, &s->options);
  if (s->base.bad == nullptr) {
    s->work = static_cast<uint64_t*>(
        c->AllocatePersistentBuffer(c, sizeof(uint64_t) * (s->options.num_channels + 1)));
    if (s->work == nullptr) s->base.bad = "num_channels";
  }
  return s;
}
msig::FilterBankTables tables_of(TfLiteContext* c, TfLiteNode* node) {
  return {GetTensorData<int16_t>(GetEvalInput(c, node, 1)),
          GetTensorData<int16_t>(GetEvalInput(c, node, 2)),
          GetTensorData<int16_t>(GetEvalInput(c, node, 3)),
          GetTensorData<int16_t>(GetEvalInput(c, node, 4)),
          GetTensorData<int16_t>(GetEvalInput(c, node, 5))};
}
TfLiteStatus bank_prepare(TfLiteContext* c, TfLiteNode* node) {
  TF_LITE_ENSURE_OK(c, check_options(node, kFilterBank));
  const int channels = options_of<msig::FilterBankOptions>(node).num_channels;
  if (node->inputs->size != 6 || node->outputs->size != 1) return fail(kFilterBank, "needs 6 inputs");
  const int bins = tensor_count(c, node, true, 0, kTfLiteUInt32);
  int counts[5];
  for (int i = 0; i < 5; ++i) counts[i] = tensor_count(c, node, true, i + 1, kTfLiteInt16);
  if (bins <= 0 || counts[0] < 0 || counts[0] != counts[1] ||
      tensor_count(c, node, false, 0, kTfLiteUInt64) != channels) {
    return fail(kFilterBank, "needs uint32 energies, int16 tables, uint64 channels out");
  }
  return kTfLiteOk;
}
TfLiteStatus bank_eval(TfLiteContext* c, TfLiteNode* node) {
  auto* s = static_cast<BankState*>(node->user_data);
  const msig::FilterBankTables t = tables_of(c, node);
  if (!s->checked) {  // the tables are constants: checked once, at the first Eval
    const int weights = count_of(GetEvalInput(c, node, 1)->dims);
    const int counts[3] = {count_of(GetEvalInput(c, node, 3)->dims),
                           count_of(GetEvalInput(c, node, 4)->dims),
                           count_of(GetEvalInput(c, node, 5)->dims)};
    const int bins = count_of(GetEvalInput(c, node, 0)->dims);
    const char* bad = msig::check_filter_bank(t, s->options.num_channels, weights, counts, 0, bins);
    if (bad != nullptr) return fail(kFilterBank, bad);
    s->checked = true;
  }
  msig::filter_bank(t, s->options.num_channels, GetTensorData<uint32_t>(GetEvalInput(c, node, 0)),
                    s->work, GetTensorData<uint64_t>(GetEvalOutput(c, node, 0)));
  return kTfLiteOk;
}

// ---------------------------------------------------------------- FilterBankSquareRoot
constexpr char kSqrt[] = "SignalFilterBankSquareRoot";
TfLiteStatus sqrt_prepare(TfLiteContext* c, TfLiteNode* node) {
  const int n = tensor_count(c, node, true, 0, kTfLiteUInt64);
  if (node->inputs->size != 2 || node->outputs->size != 1 || n <= 0 ||
      tensor_count(c, node, true, 1, kTfLiteInt32) != 1 ||
      tensor_count(c, node, false, 0, kTfLiteUInt32) != n) {
    return fail(kSqrt, "needs uint64 channels and an int32 shift, uint32 out");
  }
  return kTfLiteOk;
}
TfLiteStatus sqrt_eval(TfLiteContext* c, TfLiteNode* node) {
  const TfLiteEvalTensor* in = GetEvalInput(c, node, 0);
  const int32_t shift = *GetTensorData<int32_t>(GetEvalInput(c, node, 1));
  if (shift < 0 || shift > 31) return fail(kSqrt, "shift out of range");
  msig::filter_bank_sqrt(GetTensorData<uint64_t>(in), count_of(in->dims), shift,
                         GetTensorData<uint32_t>(GetEvalOutput(c, node, 0)));
  return kTfLiteOk;
}

// ---------------------------------------------------------------- SpectralSubtraction
constexpr char kSubtraction[] = "SignalFilterBankSpectralSubtraction";
struct SubtractionState {
  Base base;
  msig::SubtractionOptions options;
  uint32_t* noise;
};
void* subtraction_init(TfLiteContext* c, const char* b, size_t n) {
  auto* s = static_cast<SubtractionState*>(c->AllocatePersistentBuffer(c, sizeof(SubtractionState)));
  if (s == nullptr) return nullptr;
  memset(s, 0, sizeof(*s));
  s->base.op = kSubtraction;
  s->base.bad = msig::parse_subtraction(reinterpret_cast<const uint8_t*>(b), n, &s->options);
  if (s->base.bad == nullptr) {
    const size_t bytes = sizeof(uint32_t) * s->options.num_channels;
    s->noise = static_cast<uint32_t*>(c->AllocatePersistentBuffer(c, bytes));
    if (s->noise == nullptr) s->base.bad = "num_channels";
    else memset(s->noise, 0, bytes);
  }
  return s;
}
// MicroInterpreter::Reset() calls `free`: the noise estimate starts afresh.
void subtraction_reset(TfLiteContext*, void* buffer) {
  auto* s = static_cast<SubtractionState*>(buffer);
  if (s != nullptr && s->noise != nullptr) memset(s->noise, 0, sizeof(uint32_t) * s->options.num_channels);
}
TfLiteStatus subtraction_prepare(TfLiteContext* c, TfLiteNode* node) {
  TF_LITE_ENSURE_OK(c, check_options(node, kSubtraction));
  const int n = options_of<msig::SubtractionOptions>(node).num_channels;
  if (node->inputs->size != 1 || node->outputs->size != 2 ||
      tensor_count(c, node, true, 0, kTfLiteUInt32) != n ||
      tensor_count(c, node, false, 0, kTfLiteUInt32) != n ||
      tensor_count(c, node, false, 1, kTfLiteUInt32) != n) {
    return fail(kSubtraction, "needs num_channels uint32 in, two of them out");
  }
  return kTfLiteOk;
}
TfLiteStatus subtraction_eval(TfLiteContext* c, TfLiteNode* node) {
  auto* s = static_cast<SubtractionState*>(node->user_data);
  msig::spectral_subtraction(s->options, GetTensorData<uint32_t>(GetEvalInput(c, node, 0)),
                             GetTensorData<uint32_t>(GetEvalOutput(c, node, 0)), s->noise);
  memcpy(GetTensorData<uint32_t>(GetEvalOutput(c, node, 1)), s->noise,
         sizeof(uint32_t) * s->options.num_channels);
  return kTfLiteOk;
}

// ---------------------------------------------------------------- PCAN
constexpr char kPcan[] = "SignalPCAN";
void* pcan_init(TfLiteContext* c, const char* b, size_t n) {
  return init_with<msig::PcanOptions, msig::parse_pcan>(c, b, n, kPcan);
}
TfLiteStatus pcan_prepare(TfLiteContext* c, TfLiteNode* node) {
  TF_LITE_ENSURE_OK(c, check_options(node, kPcan));
  const int n = tensor_count(c, node, true, 0, kTfLiteUInt32);
  if (node->inputs->size != 3 || node->outputs->size != 1 || n <= 0 ||
      tensor_count(c, node, true, 1, kTfLiteUInt32) != n ||
      tensor_count(c, node, true, 2, kTfLiteInt16) < kPcanLutMin ||
      tensor_count(c, node, false, 0, kTfLiteUInt32) != n) {
    return fail(kPcan, "needs uint32 signal and noise, an int16 gain table, uint32 out");
  }
  return kTfLiteOk;
}
TfLiteStatus pcan_eval(TfLiteContext* c, TfLiteNode* node) {
  const TfLiteEvalTensor* in = GetEvalInput(c, node, 0);
  msig::pcan(GetTensorData<uint32_t>(in), GetTensorData<uint32_t>(GetEvalInput(c, node, 1)),
             GetTensorData<int16_t>(GetEvalInput(c, node, 2)), count_of(in->dims),
             options_of<msig::PcanOptions>(node).snr_shift,
             GetTensorData<uint32_t>(GetEvalOutput(c, node, 0)));
  return kTfLiteOk;
}

// ---------------------------------------------------------------- FilterBankLog
constexpr char kLog[] = "SignalFilterBankLog";
void* log_init(TfLiteContext* c, const char* b, size_t n) {
  return init_with<msig::LogOptions, msig::parse_log>(c, b, n, kLog);
}
TfLiteStatus log_prepare(TfLiteContext* c, TfLiteNode* node) {
  TF_LITE_ENSURE_OK(c, check_options(node, kLog));
  const int n = tensor_count(c, node, true, 0, kTfLiteUInt32);
  if (node->inputs->size != 1 || node->outputs->size != 1 || n <= 0 ||
      tensor_count(c, node, false, 0, kTfLiteInt16) != n) {
    return fail(kLog, "needs uint32 channels in, int16 features out");
  }
  return kTfLiteOk;
}
TfLiteStatus log_eval(TfLiteContext* c, TfLiteNode* node) {
  const TfLiteEvalTensor* in = GetEvalInput(c, node, 0);
  const msig::LogOptions& o = options_of<msig::LogOptions>(node);
  msig::filter_bank_log(GetTensorData<uint32_t>(in), count_of(in->dims), o.output_scale,
                        o.input_correction_bits, GetTensorData<int16_t>(GetEvalOutput(c, node, 0)));
  return kTfLiteOk;
}

}  // namespace

#define MCUNAS_REGISTER(NAME, ...)                                    \
  TfLiteRegistration* Register_##NAME() {                             \
    static TfLiteRegistration r = tflite::micro::RegisterOp(__VA_ARGS__); \
    return &r;                                                        \
  }

MCUNAS_REGISTER(SignalWindow, window_init, window_prepare, window_eval)
MCUNAS_REGISTER(SignalFftAutoScale, nullptr, auto_scale_prepare, auto_scale_eval)
MCUNAS_REGISTER(SignalRfft, rfft_init, rfft_prepare, rfft_eval)
MCUNAS_REGISTER(SignalEnergy, energy_init, energy_prepare, energy_eval)
MCUNAS_REGISTER(SignalFilterBank, bank_init, bank_prepare, bank_eval)
MCUNAS_REGISTER(SignalFilterBankSquareRoot, nullptr, sqrt_prepare, sqrt_eval)
MCUNAS_REGISTER(SignalFilterBankSpectralSubtraction, subtraction_init, subtraction_prepare,
                subtraction_eval, subtraction_reset)
MCUNAS_REGISTER(SignalPCAN, pcan_init, pcan_prepare, pcan_eval)
MCUNAS_REGISTER(SignalFilterBankLog, log_init, log_prepare, log_eval)

#undef MCUNAS_REGISTER

}  // namespace mcunas_signal

#endif  // !defined(ESP_PLATFORM)
