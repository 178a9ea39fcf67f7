// Test harness of the signal kernels: runs front-end graphs over frames and
// writes their features, on the host (g++) or on an emulated Cortex-M4F
// (arm-none-eabi-g++, QEMU mps2-an386 with semihosting for the files).
//
//   harness IN OUT
//
// IN (little-endian; mcunas/frontend/kernel_graph.py writes it):
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

struct Input {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  uint32_t u32() {
    if (end - p < 4) {
      ok = false;
      return 0;
    }
    uint32_t v = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    p += 4;
    return v;
  }
  const uint8_t* take(size_t n) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      return nullptr;
    }
    const uint8_t* at = p;
    p += n;
    return at;
  }
};

uint8_t* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return nullptr;
  size_t cap = 1 << 16, used = 0;
  uint8_t* data = static_cast<uint8_t*>(malloc(cap));
  for (;;) {
    if (used == cap) data = static_cast<uint8_t*>(realloc(data, cap *= 2));
    const size_t got = fread(data + used, 1, cap - used, f);
    if (got == 0) break;
    used += got;
  }
  fclose(f);
  *size = used;
  return data;
}

// One graph: its ops, then its clips; false on a malformed file or graph.
bool run_graph(Input* in, FILE* out, long* frames_done) {
  msig_harness::Chain chain;
  const uint32_t ops = in->u32();
  for (uint32_t i = 0; i < ops && in->ok; ++i) {
    msig_harness::OpSpec spec = {};
    const uint32_t name_len = in->u32();
    spec.name = reinterpret_cast<const char*>(in->take(name_len));
    spec.name_len = name_len;
    spec.options_len = in->u32();
    spec.options = in->take(spec.options_len);
    spec.constants = in->u32();
    for (uint32_t c = 0; c < spec.constants && c < msig_harness::kMaxConstants && in->ok; ++c) {
      spec.counts[c] = in->u32();
      spec.data[c] = reinterpret_cast<const int16_t*>(in->take(2u * spec.counts[c]));
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
  for (uint32_t c = 0; c < clips && in->ok; ++c) {
    const uint32_t frames = in->u32();
    chain.reset();
    for (uint32_t f = 0; f < frames && in->ok; ++f) {
      const int16_t* frame = reinterpret_cast<const int16_t*>(in->take(2u * n));
      if (frame == nullptr) break;
      chain.run(frame, features);
      fwrite(features, 2, bands, out);
      ++*frames_done;
    }
  }
  free(features);
  chain.print_ticks();
  return in->ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    printf("usage: harness IN OUT\n");
    return 2;
  }
  size_t size = 0;
  uint8_t* data = read_file(argv[1], &size);
  FILE* out = fopen(argv[2], "wb");
  if (data == nullptr || out == nullptr || size < 8 || memcmp(data, "MSIG", 4) != 0) {
    printf("error: cannot read %s or write %s\n", argv[1], argv[2]);
    return 2;
  }
  msig_harness::print_calibration();
  Input in{data + 4, data + size};
  const uint32_t graphs = in.u32();
  long frames = 0;
  for (uint32_t g = 0; g < graphs; ++g) {
    if (!run_graph(&in, out, &frames)) {
      fclose(out);
      return 1;
    }
  }
  fclose(out);
  printf("ok %ld\n", frames);
  return 0;
}
