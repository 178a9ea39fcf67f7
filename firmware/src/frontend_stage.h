// The audio front end in the firmware: `frontend.tflite` (TFLM signal ops) run
// on a raw int16 audio window, one invoke per hop, its int16 features quantised
// into the model's int8 input exactly as mcunas does on the host
// (q = round((feature / 2^output_bits) / scale) + zero_point, clamped).
// Built only when generated/mcunas_config.h defines MCUNAS_HAS_FRONTEND 1
// (`mcunas bench` of a best/ folder with a front end).
#ifndef MCUNAS_FRONTEND_STAGE_H_
#define MCUNAS_FRONTEND_STAGE_H_

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "tensorflow/lite/micro/micro_interpreter.h"

namespace mcunas {

#if MCUNAS_HAS_FRONTEND
// Builds the front end's interpreter in its own arena (once). Returns nullptr, or
// an error code for the `error` event with a message in *message.
const char* frontend_set_up(const TfLiteTensor* model_input, const char** message);
// One inference window: reset (PCAN's noise estimate starts afresh), then one invoke
// per frame of the synthetic window, each frame's features written into
// model_input. *ticks: port_ticks() spent in the invokes and the quantisation.
bool frontend_window(TfLiteTensor* model_input, uint64_t* ticks);
// The front end's arena: bytes the planner used, bytes obtained from the heap.
size_t frontend_arena_used();
size_t frontend_arena_capacity();
#endif

}  // namespace mcunas

#endif  // MCUNAS_FRONTEND_STAGE_H_
