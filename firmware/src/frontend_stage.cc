#include "frontend_stage.h"

#if MCUNAS_HAS_FRONTEND

#include <math.h>
#include <string.h>

#include <new>

#include "generated/frontend_data.h"
#include "generated/frontend_ops.h"
#include "port.h"
#include "util.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/schema/schema_generated.h"

namespace mcunas {

namespace {

McunasFrontendOpResolver g_fe_resolver;
alignas(tflite::MicroInterpreter) uint8_t g_fe_storage[sizeof(tflite::MicroInterpreter)];
tflite::MicroInterpreter* g_fe = nullptr;
size_t g_fe_capacity = 0;
int16_t g_frame[MCUNAS_FRONTEND_FRAME_SAMPLES];

// Sample n of the synthetic audio window: a deterministic hash of n at about a
// quarter of full scale, so overlapping frames see the same samples.
int16_t sample_at(uint32_t n) {
  uint32_t x = n * 2654435761u + 0x9E3779B9u;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return static_cast<int16_t>(static_cast<int32_t>(x >> 16) / 4 - 8192);
}

}  // namespace

const char* frontend_set_up(const TfLiteTensor* model_input, const char** message) {
  if (g_fe != nullptr) return nullptr;
  if (crc32(g_frontend_data, g_frontend_data_len) != MCUNAS_FRONTEND_CRC32_U32) {
    *message = "front-end bytes in flash do not match MCUNAS_FRONTEND_CRC32";
    return "frontend_crc";
  }
  const tflite::Model* model = tflite::GetModel(g_frontend_data);
  if (model->version() != TFLITE_SCHEMA_VERSION) {
    *message = "front-end schema version differs from the runtime's";
    return "model_schema";
  }
  if (McunasRegisterFrontendOps(g_fe_resolver) != kTfLiteOk) {
    *message = "front-end op registration failed (resolver full, or a signal op missing)";
    return "op_register_failed";
  }
  const size_t want = static_cast<size_t>(MCUNAS_FRONTEND_FRAMES) * MCUNAS_FRONTEND_MEL_BANDS;
  if (model_input == nullptr || model_input->type != kTfLiteInt8 || model_input->bytes != want) {
    *message = "the model's input is not int8 frames x mel bands of this front end";
    return "frontend_shape";
  }
  size_t got = 0;
  uint8_t* arena = port_alloc_arena(MCUNAS_FRONTEND_ARENA_BYTES, &got);
  if (arena == nullptr) {
    *message = "could not allocate the front end's tensor arena";
    return "arena_alloc_failed";
  }
  g_fe_capacity = got;
  tflite::MicroInterpreter* fe =
      new (g_fe_storage) tflite::MicroInterpreter(model, g_fe_resolver, arena, got);
  if (fe->AllocateTensors() != kTfLiteOk) {
    *message = "front end: AllocateTensors failed (arena too small or op missing)";
    return "arena_too_small";
  }
  const TfLiteTensor* in = fe->input(0);
  const TfLiteTensor* out = fe->output(0);
  if (in == nullptr || out == nullptr || in->type != kTfLiteInt16 || out->type != kTfLiteInt16 ||
      in->bytes != sizeof(g_frame) || out->bytes != 2u * MCUNAS_FRONTEND_MEL_BANDS) {
    *message = "front end: input or output is not the int16 frame and bands it was built for";
    return "frontend_shape";
  }
  g_fe = fe;
  return nullptr;
}

bool frontend_window(TfLiteTensor* model_input, uint64_t* ticks) {
  *ticks = 0;
  if (g_fe == nullptr || g_fe->Reset() != kTfLiteOk) return false;
  const float scale = model_input->params.scale;
  const int32_t zero_point = model_input->params.zero_point;
  const float unit = static_cast<float>(1 << MCUNAS_FRONTEND_OUTPUT_BITS);
  int8_t* dst = model_input->data.int8;
  for (uint32_t f = 0; f < MCUNAS_FRONTEND_FRAMES; ++f) {
    for (uint32_t j = 0; j < MCUNAS_FRONTEND_FRAME_SAMPLES; ++j) {
      g_frame[j] = sample_at(f * MCUNAS_FRONTEND_HOP_SAMPLES + j);
    }
    memcpy(g_fe->input(0)->data.i16, g_frame, sizeof(g_frame));
    const uint32_t start = port_ticks();
    if (g_fe->Invoke() != kTfLiteOk) return false;
    const int16_t* features = g_fe->output(0)->data.i16;
    for (uint32_t b = 0; b < MCUNAS_FRONTEND_MEL_BANDS; ++b) {
      // float32 throughout and round-half-even, as numpy's round in mcunas.
      const float q = nearbyintf((static_cast<float>(features[b]) / unit) / scale) + zero_point;
      const float clamped = q < -128.0f ? -128.0f : (q > 127.0f ? 127.0f : q);
      dst[f * MCUNAS_FRONTEND_MEL_BANDS + b] = static_cast<int8_t>(clamped);
    }
    *ticks += port_ticks() - start;
  }
  return true;
}

size_t frontend_arena_used() { return g_fe ? g_fe->arena_used_bytes() : 0; }
size_t frontend_arena_capacity() { return g_fe_capacity; }

}  // namespace mcunas

#endif  // MCUNAS_HAS_FRONTEND
