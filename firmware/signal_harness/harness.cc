// Test harness of the signal kernels: runs front-end graphs over frames and
// writes their features, on the host (g++) or on an emulated Cortex-M4F
// (arm-none-eabi-g++, QEMU mps2-an386 with semihosting for the files).
//
//   harness IN OUT
//
// IN (little-endian; mcunas/frontend/kernels/graph.py writes it):
//   "MSIG" u32 graphs
//   per graph: u32 ops; per op: u32 name_len, name, u32 options_len, options,
//                              u32 constants; per constant: u32 count, int16[count]
//              u32 frame_samples, u32 bands, u32 clips;
//              per clip: u32 frames, int16[frames * frame_samples]
// OUT: int16 features of every frame, in order. Each clip starts from reset
// state (the noise estimate). Prints "ok FRAMES" or "error: OP: OPTION" (exit 1).
// On the Arm core it also prints, per graph, "ops" and the SysTick ticks spent
// in each op over all frames ("ticks T0 T1 ..."), and "calibration" ticks of a
// loop of a known instruction count.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/signal/signal_kernels.h"
#include "chain.h"
#include "ticks.h"

namespace {

// Reads the input file as it goes: a graph's tables are kept until the graph
// is done (`keep`), frames go through one buffer.
struct Input {
  FILE* file;
  bool ok = true;
  void* kept[64] = {};
  int kept_count = 0;

  uint32_t u32() {
    uint8_t b[4] = {};
    if (fread(b, 1, 4, file) != 4) ok = false;
    return b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  bool read(void* to, size_t n) {
    if (n != 0 && fread(to, 1, n, file) != n) ok = false;
    return ok;
  }
  // n bytes kept until release().
  const uint8_t* keep(size_t n) {
    if (kept_count == 64) ok = false;
    if (!ok) return nullptr;
    uint8_t* at = static_cast<uint8_t*>(malloc(n ? n : 1));
    kept[kept_count++] = at;
    return read(at, n) ? at : nullptr;
  }
  void release() {
    while (kept_count > 0) free(kept[--kept_count]);
  }
};

// One graph: its ops, then its clips; false on a malformed file or graph.
bool run_graph(Input* in, FILE* out, long* frames_done) {
  msig_harness::Chain chain;
  const uint32_t ops = in->u32();
  for (uint32_t i = 0; i < ops && in->ok; ++i) {
    msig_harness::OpSpec spec = {};
    const uint32_t name_len = in->u32();
    spec.name = reinterpret_cast<const char*>(in->keep(name_len));
    spec.name_len = name_len;
    spec.options_len = in->u32();
    spec.options = in->keep(spec.options_len);
    spec.constants = in->u32();
    for (uint32_t c = 0; c < spec.constants && c < msig_harness::kMaxConstants && in->ok; ++c) {
      spec.counts[c] = in->u32();
      spec.data[c] = reinterpret_cast<const int16_t*>(in->keep(2u * spec.counts[c]));
    }
    if (!in->ok) return false;
    const char* bad = chain.add(spec);
    if (bad != nullptr) {
      printf("error: %.*s: %s\n", static_cast<int>(name_len), spec.name, bad);
      return false;
    }
  }
  const uint32_t n = in->u32(), bands = in->u32(), clips = in->u32();
  const char* bad = in->ok ? chain.finish(n, bands) : "truncated input";
  if (bad != nullptr) {
    printf("error: graph: %s\n", bad);
    return false;
  }
  int16_t* features = static_cast<int16_t*>(malloc(2u * bands));
  int16_t* frame = static_cast<int16_t*>(malloc(2u * n));
  for (uint32_t c = 0; c < clips && in->ok; ++c) {
    const uint32_t frames = in->u32();
    chain.reset();
    for (uint32_t f = 0; f < frames && in->ok; ++f) {
      if (!in->read(frame, 2u * n)) break;
      chain.run(frame, features);
      fwrite(features, 2, bands, out);
      ++*frames_done;
    }
  }
  free(features);
  free(frame);
  chain.print_ticks();
  chain.release();
  in->release();
  return in->ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    printf("usage: harness IN OUT\n");
    return 2;
  }
  FILE* file = fopen(argv[1], "rb");
  FILE* out = fopen(argv[2], "wb");
  char magic[4] = {};
  if (file == nullptr || out == nullptr || fread(magic, 1, 4, file) != 4 ||
      memcmp(magic, "MSIG", 4) != 0) {
    printf("error: cannot read %s or write %s\n", argv[1], argv[2]);
    return 2;
  }
  msig_harness::print_calibration();
  Input in{file};
  const uint32_t graphs = in.u32();
  long frames = 0;
  for (uint32_t g = 0; g < graphs; ++g) {
    if (!run_graph(&in, out, &frames)) {
      fclose(out);
      fclose(file);
      return 1;
    }
  }
  fclose(out);
  fclose(file);
  printf("ok %ld\n", frames);
  return 0;
}
