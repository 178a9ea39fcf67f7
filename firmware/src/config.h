// Build-time settings: the generated generated/mcunas_config.h (written by
// mcunas/measure/pio.py from the board profile) plus defaults and checks.
#ifndef MCUNAS_CONFIG_H_
#define MCUNAS_CONFIG_H_

#include "generated/mcunas_config.h"

#define MCUNAS_FW_VERSION "0.1.0"

#ifndef MCUNAS_BOARD_NAME
#error "generated/mcunas_config.h must define MCUNAS_BOARD_NAME"
#endif
#ifndef MCUNAS_ARENA_BYTES
#error "generated/mcunas_config.h must define MCUNAS_ARENA_BYTES"
#endif
#ifndef MCUNAS_CLOCK_HZ
#define MCUNAS_CLOCK_HZ 0
#endif
#ifndef MCUNAS_BAUD
#define MCUNAS_BAUD 115200
#endif
#ifndef MCUNAS_RUNS
#define MCUNAS_RUNS 20
#endif
#ifndef MCUNAS_WARMUP_RUNS
#define MCUNAS_WARMUP_RUNS 3
#endif
#ifndef MCUNAS_PROFILE_RUNS
#define MCUNAS_PROFILE_RUNS 3
#endif
#ifndef MCUNAS_STACK_BYTES
#define MCUNAS_STACK_BYTES 16384
#endif
#ifndef MCUNAS_MARKER_PIN
#define MCUNAS_MARKER_PIN -1  // [power] marker_pin of the board profile; -1: none
#endif
#ifndef MCUNAS_MAX_OPS
#define MCUNAS_MAX_OPS 256
#endif

// The audio front end (frontend_stage.h): generated/mcunas_config.h defines these
// with MCUNAS_HAS_FRONTEND 1 when the build carries frontend.tflite.
#ifndef MCUNAS_HAS_FRONTEND
#define MCUNAS_HAS_FRONTEND 0
#endif
#if MCUNAS_HAS_FRONTEND && !(defined(MCUNAS_FRONTEND_FRAMES) && defined(MCUNAS_FRONTEND_FRAME_SAMPLES) && \
                             defined(MCUNAS_FRONTEND_HOP_SAMPLES) && defined(MCUNAS_FRONTEND_MEL_BANDS) && \
                             defined(MCUNAS_FRONTEND_OUTPUT_BITS) && defined(MCUNAS_FRONTEND_ARENA_BYTES))
#error "MCUNAS_HAS_FRONTEND needs MCUNAS_FRONTEND_FRAMES, _FRAME_SAMPLES, _HOP_SAMPLES, _MEL_BANDS, _OUTPUT_BITS, _ARENA_BYTES"
#endif

#define MCUNAS_MAX_RUNS 200
static_assert(MCUNAS_RUNS >= 1 && MCUNAS_RUNS <= MCUNAS_MAX_RUNS, "MCUNAS_RUNS out of range");
static_assert(MCUNAS_ARENA_BYTES >= 1024, "MCUNAS_ARENA_BYTES too small");

#endif  // MCUNAS_CONFIG_H_
