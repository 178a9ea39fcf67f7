// Host double of TFLite Micro's MicroInterpreter (see ../../../../README.md).
#ifndef DEPLOY_HOST_MICRO_INTERPRETER_H_
#define DEPLOY_HOST_MICRO_INTERPRETER_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

// The double's tensor sizes, set by the test's build (-D) from the model.
#ifndef HOST_INPUT_BYTES
#error "define HOST_INPUT_BYTES and HOST_OUTPUT_BYTES"
#endif

namespace tflite {

class MicroResourceVariables;
class MicroProfilerInterface;

class MicroInterpreter {
 public:
  MicroInterpreter(const Model* model, const MicroOpResolver& op_resolver,
                   uint8_t* tensor_arena, size_t tensor_arena_size,
                   MicroResourceVariables* resource_variables = nullptr,
                   MicroProfilerInterface* profiler = nullptr,
                   bool preserve_all_tensors = false)
      : arena_(tensor_arena), arena_size_(tensor_arena_size) {
    (void)model, (void)op_resolver, (void)resource_variables, (void)profiler,
        (void)preserve_all_tensors;
    printf("arena %zu aligned16 %d\n", tensor_arena_size,
           static_cast<int>(reinterpret_cast<uintptr_t>(tensor_arena) % 16 == 0));
  }
  TfLiteStatus AllocateTensors() {
    if (arena_size_ < HOST_INPUT_BYTES + HOST_OUTPUT_BYTES) return kTfLiteError;
    input_.type = output_.type = kTfLiteInt8;
    input_.bytes = HOST_INPUT_BYTES;
    output_.bytes = HOST_OUTPUT_BYTES;
    input_.data.int8 = reinterpret_cast<int8_t*>(arena_);
    output_.data.int8 = reinterpret_cast<int8_t*>(arena_ + HOST_INPUT_BYTES);
    return kTfLiteOk;
  }
  // Identity on the first elements: output[i] = input[i].
  TfLiteStatus Invoke() {
    for (size_t i = 0; i < output_.bytes; ++i) {
      output_.data.int8[i] = i < input_.bytes ? input_.data.int8[i] : 0;
    }
    return kTfLiteOk;
  }
  TfLiteStatus Reset() { return kTfLiteOk; }
  TfLiteTensor* input(size_t index) { return index == 0 ? &input_ : nullptr; }
  TfLiteTensor* output(size_t index) { return index == 0 ? &output_ : nullptr; }
  size_t arena_used_bytes() const { return HOST_INPUT_BYTES + HOST_OUTPUT_BYTES; }

 private:
  uint8_t* arena_;
  size_t arena_size_;
  TfLiteTensor input_{};
  TfLiteTensor output_{};
};

}  // namespace tflite

#endif  // DEPLOY_HOST_MICRO_INTERPRETER_H_
