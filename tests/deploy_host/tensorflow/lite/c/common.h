// Host double of TFLite Micro's c/common.h (see ../../../README.md): only the
// registration type mcunas's signal kernels return (signal/tflm_signal_ops.h).
#ifndef DEPLOY_HOST_C_COMMON_H_
#define DEPLOY_HOST_C_COMMON_H_

#include "tensorflow/lite/schema/schema_generated.h"

struct TfLiteRegistration;

#endif  // DEPLOY_HOST_C_COMMON_H_
