// Host double of the TFLite schema and c/common.h types (see ../../../README.md).
#ifndef DEPLOY_HOST_SCHEMA_GENERATED_H_
#define DEPLOY_HOST_SCHEMA_GENERATED_H_

#include <stddef.h>
#include <stdint.h>

#define TFLITE_SCHEMA_VERSION (3)

typedef enum TfLiteStatus { kTfLiteOk = 0, kTfLiteError = 1 } TfLiteStatus;
typedef enum {
  kTfLiteNoType = 0,
  kTfLiteFloat32 = 1,
  kTfLiteInt16 = 7,
  kTfLiteInt8 = 9
} TfLiteType;
typedef struct TfLiteQuantizationParams {
  float scale;
  int32_t zero_point;
} TfLiteQuantizationParams;
typedef union TfLitePtrUnion {
  int8_t* int8;
  int16_t* i16;
  float* f;
  void* raw;
} TfLitePtrUnion;
typedef struct TfLiteTensor {
  TfLiteType type;
  TfLitePtrUnion data;
  TfLiteQuantizationParams params;
  size_t bytes;
} TfLiteTensor;

namespace tflite {

struct Model {
  uint32_t version() const { return TFLITE_SCHEMA_VERSION; }
};

inline const Model* GetModel(const void* buf) {
  static Model model;
  return buf != nullptr ? &model : nullptr;
}

}  // namespace tflite

#endif  // DEPLOY_HOST_SCHEMA_GENERATED_H_
