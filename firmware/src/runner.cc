#include "runner.h"

#include <string.h>

#include <new>

#include "config.h"
#include "frontend_stage.h"
#include "generated/model_data.h"
#include "generated/model_ops.h"
#if MCUNAS_HAS_FRONTEND
#include "generated/frontend_data.h"
#endif
#include "json_line.h"
#include "op_profiler.h"
#include "port.h"
#include "util.h"
#if defined(__arm__)
#include "cortex_m.h"
// CMSIS's core clock variable; weak, so a core without it links and reports none.
extern "C" __attribute__((weak)) uint32_t SystemCoreClock;
#endif
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tensorflow/lite/schema/schema_utils.h"

namespace mcunas {

namespace {

// Error codes of the `error` event (the host records them on the trial).
const char kErrModelCrc[] = "model_crc";
const char kErrSchema[] = "model_schema";
const char kErrOpRegister[] = "op_register_failed";
const char kErrOpMissing[] = "op_missing";
const char kErrArenaAlloc[] = "arena_alloc_failed";
const char kErrArenaSmall[] = "arena_too_small";
const char kErrInvoke[] = "invoke_failed";

struct State {
  bool ready = false;        // interpreter built and tensors allocated
  const char* error = nullptr;  // set-up error code, repeated on every run
  char message[96] = {};
  size_t arena_capacity = 0;
  uintptr_t arena_addr = 0;     // where the arena was allocated (0: not yet)
};

State g_state;
McunasOpResolver g_resolver;
OpProfiler g_profiler;
alignas(tflite::MicroInterpreter) uint8_t g_interpreter_storage[sizeof(tflite::MicroInterpreter)];
tflite::MicroInterpreter* g_interpreter = nullptr;
uint32_t g_latency_us[MCUNAS_MAX_RUNS];
#if MCUNAS_HAS_FRONTEND
uint32_t g_frontend_us[MCUNAS_MAX_RUNS];  // one inference window each
#endif
char g_line[64];
size_t g_line_len = 0;

void log_line(const char* text) {
  port_write(text, strlen(text));
  port_write("\n", 1);
}

void set_error(const char* code, const char* message, const char* detail) {
  g_state.error = code;
  size_t n = 0;
  for (const char* p = message; *p && n + 1 < sizeof(g_state.message); ++p) g_state.message[n++] = *p;
  for (const char* p = detail; p && *p && n + 1 < sizeof(g_state.message); ++p) {
    g_state.message[n++] = *p;
  }
  g_state.message[n] = 0;
}

void print_error(const char* code, const char* message) {
  JsonLine("error").str("code", code).str("message", message).hex32("model_crc32", MCUNAS_MODEL_CRC32_U32).end();
}

// The compiler's optimisation, from GCC's and Clang's predefined macros.
#if !defined(__OPTIMIZE__)
const char kOpt[] = "none";
#elif defined(__OPTIMIZE_SIZE__)
const char kOpt[] = "size";
#else
const char kOpt[] = "speed";
#endif

// The build setup the host stores with each measured row (mcunas/measure/setup_report.py
// decodes it): where the model and the arena live, which core and whether its caches
// are on (CPUID, CCR), the clock the core really runs at, the runtime and -O level.
void print_setup(JsonLine& line) {
  line.begin_object("setup")
      .hex32("model_addr", static_cast<uint32_t>(reinterpret_cast<uintptr_t>(g_model_data)))
      .str("opt", kOpt);
  if (g_state.arena_addr != 0) line.hex32("arena_addr", static_cast<uint32_t>(g_state.arena_addr));
#ifdef MCUNAS_RUNTIME
  line.str("runtime", MCUNAS_RUNTIME);
#endif
#if defined(__arm__)
  line.hex32("cpuid", cortex_m::reg(cortex_m::kCpuid)).hex32("ccr", cortex_m::reg(cortex_m::kCcr));
  if (&SystemCoreClock != nullptr) line.num("core_clock_hz", SystemCoreClock);
#endif
  line.end_object();
}

void print_ready() {
  JsonLine line("ready");
  line.str("board", MCUNAS_BOARD_NAME)
      .str("fw", MCUNAS_FW_VERSION)
      .num("clock_hz", MCUNAS_CLOCK_HZ)
      .hex32("model_crc32", MCUNAS_MODEL_CRC32_U32)
      .num("model_bytes", g_model_data_len)
      .num("arena_budget_bytes", MCUNAS_ARENA_BYTES)
      .str("timer", port_timer_name())
#if MCUNAS_HAS_FRONTEND
      .hex32("frontend_crc32", MCUNAS_FRONTEND_CRC32_U32)
#endif
      ;
  print_setup(line);
  line.end();
}

// Every op code of the model must be in the resolver, else name the first missing one.
bool check_ops(const tflite::Model* model) {
  const auto* codes = model->operator_codes();
  if (codes == nullptr) return true;
  for (size_t i = 0; i < codes->size(); ++i) {
    const tflite::OperatorCode* opcode = codes->Get(static_cast<unsigned>(i));
    const tflite::BuiltinOperator code = tflite::GetBuiltinCode(opcode);
    if (code == tflite::BuiltinOperator_CUSTOM) {
      const char* name = opcode->custom_code() ? opcode->custom_code()->c_str() : "";
      if (g_resolver.FindOp(name) == nullptr) {
        set_error(kErrOpMissing, "custom op not registered: ", name);
        return false;
      }
    } else if (g_resolver.FindOp(code) == nullptr) {
      set_error(kErrOpMissing, "op not registered: ", tflite::EnumNameBuiltinOperator(code));
      return false;
    }
  }
  return true;
}

// Builds the interpreter once; later runs reuse it (and its error, if any).
void set_up() {
  if (g_state.ready || g_state.error != nullptr) return;
  if (crc32(g_model_data, g_model_data_len) != MCUNAS_MODEL_CRC32_U32) {
    set_error(kErrModelCrc, "model bytes in flash do not match MCUNAS_MODEL_CRC32", nullptr);
    return;
  }
  const tflite::Model* model = tflite::GetModel(g_model_data);
  if (model->version() != TFLITE_SCHEMA_VERSION) {
    set_error(kErrSchema, "model schema version differs from the runtime's", nullptr);
    return;
  }
  if (McunasRegisterOps(g_resolver) != kTfLiteOk) {
    set_error(kErrOpRegister, "op resolver registration failed", nullptr);
    return;
  }
  if (!check_ops(model)) return;
  size_t got = 0;
  uint8_t* arena = port_alloc_arena(MCUNAS_ARENA_BYTES, &got);
  if (arena == nullptr) {
    set_error(kErrArenaAlloc, "could not allocate the tensor arena", nullptr);
    return;
  }
  g_state.arena_capacity = got;
  g_state.arena_addr = reinterpret_cast<uintptr_t>(arena);
  g_interpreter = new (g_interpreter_storage)
      tflite::MicroInterpreter(model, g_resolver, arena, got, nullptr, &g_profiler);
  if (g_interpreter->AllocateTensors() != kTfLiteOk) {
    set_error(kErrArenaSmall, "AllocateTensors failed: arena too small for this model", nullptr);
    return;
  }
  g_state.ready = true;
}

// Deterministic pseudo-random input: latency of int8 kernels barely depends on
// the data, but all-zero inputs could take shortcuts.
void fill_inputs() {
  uint32_t seed = 0x2545F491u;
  for (size_t t = 0; t < g_interpreter->inputs_size(); ++t) {
    TfLiteTensor* input = g_interpreter->input(t);
    if (input == nullptr || input->data.raw == nullptr) continue;
    uint8_t* bytes = reinterpret_cast<uint8_t*>(input->data.raw);
    const bool is_float = input->type == kTfLiteFloat32;
    for (size_t i = 0; i < input->bytes; ++i) {
      seed = seed * 1664525u + 1013904223u;
      bytes[i] = is_float ? 0 : static_cast<uint8_t>(seed >> 24);
    }
  }
}

uint64_t ticks_to_tenths_us(uint64_t ticks) {
  const uint64_t hz = port_tick_hz();
  return hz ? (ticks * 10000000ull) / hz : 0;
}

// One timed invoke in microseconds. The 32-bit tick counter wraps after
// 2^32 / f seconds (~9 s at 480 MHz); past that the coarse clock is used.
void print_mark(const char* edge) {
  JsonLine line("mark");
  line.str("edge", edge).end();
}

bool timed_invoke(uint32_t* latency_us) {
  const uint64_t coarse_start = port_micros();
  const uint32_t start = port_ticks();
  const TfLiteStatus status = g_interpreter->Invoke();
  const uint32_t ticks = port_ticks() - start;
  const uint64_t coarse = port_micros() - coarse_start;
  const uint64_t fine = ticks_to_tenths_us(ticks) / 10;
  const uint64_t wrap_us = port_tick_hz() ? (0x100000000ull * 1000000ull) / port_tick_hz() : 0;
  *latency_us = static_cast<uint32_t>(coarse * 10 > wrap_us * 9 ? coarse : fine);
  return status == kTfLiteOk;
}

#if MCUNAS_HAS_FRONTEND
// The front end's set-up, then one window so the model's input holds real features.
bool frontend_prepare() {
  const char* message = "";
  const char* code = frontend_set_up(g_interpreter->input(0), &message);
  uint64_t ticks = 0;
  if (code == nullptr && !frontend_window(g_interpreter->input(0), &ticks)) {
    code = kErrInvoke;
    message = "front end: Invoke failed";
  }
  if (code != nullptr) print_error(code, message);
  return code == nullptr;
}

// MCUNAS_RUNS timed windows of the front end (after the model's runs: outside the
// energy window, which stays the model's).
bool frontend_timed() {
  for (int i = 0; i < MCUNAS_RUNS; ++i) {
    uint64_t ticks = 0;
    if (!frontend_window(g_interpreter->input(0), &ticks)) {
      print_error(kErrInvoke, "front end: Invoke failed");
      return false;
    }
    g_frontend_us[i] = static_cast<uint32_t>(ticks_to_tenths_us(ticks) / 10);
  }
  return true;
}

void frontend_fields(JsonLine& line) {
  uint32_t lo = g_frontend_us[0], hi = g_frontend_us[0];
  for (int i = 1; i < MCUNAS_RUNS; ++i) {
    if (g_frontend_us[i] < lo) lo = g_frontend_us[i];
    if (g_frontend_us[i] > hi) hi = g_frontend_us[i];
  }
  line.begin_object("frontend")
      .hex32("crc32", MCUNAS_FRONTEND_CRC32_U32)
      .num("frames", MCUNAS_FRONTEND_FRAMES)
      .num("frame_samples", MCUNAS_FRONTEND_FRAME_SAMPLES)
      .num("hop_samples", MCUNAS_FRONTEND_HOP_SAMPLES)
      .begin_object("latency_us")
      .num("min", lo)
      .num("median", median_u32(g_frontend_us, MCUNAS_RUNS))
      .num("max", hi)
      .end_object()
      .num("arena_bytes", frontend_arena_used())
      .num("arena_capacity_bytes", frontend_arena_capacity())
      .num("model_bytes", g_frontend_data_len)
      .end_object();
}
#endif

void measure() {
  set_up();
  if (g_state.error != nullptr) {
    print_error(g_state.error, g_state.message);
    return;
  }
#if MCUNAS_HAS_FRONTEND
  if (!frontend_prepare()) return;
#else
  fill_inputs();
#endif
  g_profiler.set_enabled(false);
  for (int i = 0; i < MCUNAS_WARMUP_RUNS; ++i) {
    if (g_interpreter->Invoke() != kTfLiteOk) {
      print_error(kErrInvoke, "Invoke failed during warm-up");
      return;
    }
  }
  port_stack_paint();
  // The energy window: the mark lines go out before the marker rises and after it
  // falls, so neither the UART nor the printing is inside it.
  print_mark("start");
  port_marker(true);
  for (int i = 0; i < MCUNAS_RUNS; ++i) {
    if (!timed_invoke(&g_latency_us[i])) {
      port_marker(false);
      print_error(kErrInvoke, "Invoke failed");
      return;
    }
  }
  port_marker(false);
  print_mark("end");
  const size_t stack_used = port_stack_used();
  g_profiler.reset();
  g_profiler.set_enabled(true);
  for (int i = 0; i < MCUNAS_PROFILE_RUNS; ++i) {
    g_profiler.start_invoke();
    g_interpreter->Invoke();
  }
  g_profiler.set_enabled(false);

  uint32_t lo = g_latency_us[0], hi = g_latency_us[0];
  for (int i = 1; i < MCUNAS_RUNS; ++i) {
    if (g_latency_us[i] < lo) lo = g_latency_us[i];
    if (g_latency_us[i] > hi) hi = g_latency_us[i];
  }
  const uint32_t median = median_u32(g_latency_us, MCUNAS_RUNS);
#if MCUNAS_HAS_FRONTEND
  if (!frontend_timed()) return;
#endif

  JsonLine line("result");
  line.hex32("model_crc32", MCUNAS_MODEL_CRC32_U32)
      .num("runs", MCUNAS_RUNS)
      .num("warmup", MCUNAS_WARMUP_RUNS)
      .begin_object("latency_us")
      .num("min", lo)
      .num("median", median)
      .num("max", hi)
      .end_object()
      .num("arena_bytes", g_interpreter->arena_used_bytes())
      .num("arena_capacity_bytes", g_state.arena_capacity)
      .hex32("arena_addr", static_cast<uint32_t>(g_state.arena_addr))
      .num("stack_bytes", stack_used)
      .num("static_ram_bytes", port_static_ram())
      .num("model_bytes", g_model_data_len)
      .str("timer", port_timer_name())
      .num("timer_hz", port_tick_hz())
      .num("profile_runs", MCUNAS_PROFILE_RUNS)
      .boolean("ops_truncated", g_profiler.truncated());
#if MCUNAS_HAS_FRONTEND
  frontend_fields(line);
#endif
  line.begin_array("ops");
  const uint64_t runs = MCUNAS_PROFILE_RUNS > 0 ? MCUNAS_PROFILE_RUNS : 1;
  for (size_t i = 0; i < g_profiler.count(); ++i) {
    line.begin_object(nullptr)
        .str("op", g_profiler.tag(i))
        .tenths("us", ticks_to_tenths_us(g_profiler.ticks(i)) / runs)
        .end_object();
  }
  line.end();
}

void handle_line(const char* line) {
  if (strcmp(line, "run") == 0) {
    measure();
  } else if (strcmp(line, "hello") == 0) {
    print_ready();
  } else if (line[0] != 0) {
    log_line("mcunas: unknown command (use hello or run)");
  }
}

}  // namespace

void runner_begin() {
  log_line("mcunas: measurement firmware " MCUNAS_FW_VERSION " for " MCUNAS_BOARD_NAME);
  print_ready();
}

void runner_poll() {
  for (;;) {
    const int c = port_read_byte();
    if (c < 0) {
      port_idle();
      return;
    }
    if (c == '\n' || c == '\r') {
      g_line[g_line_len] = 0;
      handle_line(g_line);
      g_line_len = 0;
    } else if (g_line_len + 1 < sizeof(g_line)) {
      g_line[g_line_len++] = static_cast<char>(c);
    }
  }
}

}  // namespace mcunas
