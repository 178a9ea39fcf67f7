// The ops' options: flexbuffer maps of integers and booleans (the custom
// options mcunas/frontend/graph.py writes), read by key, and their ranges.
//
// A flexbuffer ends with the root's packed type and byte width; a map's
// values are preceded by the offset and width of its keys vector and its size,
// and followed by one packed type byte per value (type << 2 | log2 width).
#include <string.h>

#include "signal_kernels.h"

namespace msig {

namespace {

enum FlexType : uint8_t {
  kInt = 1,
  kUInt = 2,
  kIndirectInt = 6,
  kIndirectUInt = 7,
  kMap = 9,
  kBool = 26,
};

struct Reader {
  const uint8_t* buf;
  size_t len;

  bool in_range(const uint8_t* p, size_t width) const {
    return p >= buf && width <= len && p <= buf + len - width;
  }
  // A little-endian unsigned of `width` bytes (1, 2, 4 or 8).
  bool unsigned_at(const uint8_t* p, size_t width, uint64_t* out) const {
    if (!in_range(p, width)) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    *out = v;
    return true;
  }
  bool signed_at(const uint8_t* p, size_t width, int64_t* out) const {
    uint64_t v = 0;
    if (!unsigned_at(p, width, &v)) return false;
    const unsigned bits = static_cast<unsigned>(8 * width);
    if (bits < 64 && (v >> (bits - 1)) != 0) v |= ~UINT64_C(0) << bits;
    *out = static_cast<int64_t>(v);
    return true;
  }
  // Follows the offset at p (width bytes) backwards.
  bool deref(const uint8_t* p, size_t width, const uint8_t** out) const {
    uint64_t off = 0;
    if (!unsigned_at(p, width, &off) || off > static_cast<uint64_t>(p - buf)) return false;
    *out = p - off;
    return true;
  }
};

bool valid_width(uint64_t w) { return w == 1 || w == 2 || w == 4 || w == 8; }

// The value of a map entry at p (parent width `width`, packed type `packed`).
bool scalar(const Reader& r, const uint8_t* p, size_t width, uint8_t packed, int64_t* out) {
  const uint8_t type = packed >> 2;
  const size_t child = size_t{1} << (packed & 3);
  if (type == kInt) return r.signed_at(p, width, out);
  uint64_t u = 0;
  if (type == kUInt || type == kBool) {
    if (!r.unsigned_at(p, width, &u)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  const uint8_t* target = nullptr;
  if (type == kIndirectInt) return r.deref(p, width, &target) && r.signed_at(target, child, out);
  if (type == kIndirectUInt && r.deref(p, width, &target) && r.unsigned_at(target, child, &u)) {
    *out = static_cast<int64_t>(u);
    return true;
  }
  return false;
}

}  // namespace

bool flex_int(const uint8_t* buf, size_t len, const char* key, int64_t* out) {
  if (buf == nullptr || len < 3) return false;
  const Reader r{buf, len};
  const size_t root_width = buf[len - 1];
  const uint8_t root_type = buf[len - 2];
  if (!valid_width(root_width) || (root_type >> 2) != kMap || len < 2 + root_width) return false;
  const uint8_t* values = nullptr;
  if (!r.deref(buf + len - 2 - root_width, root_width, &values)) return false;
  const size_t width = size_t{1} << (root_type & 3);
  uint64_t size = 0, keys_width = 0;
  const uint8_t* keys = nullptr;
  if (values < buf + 3 * width || !r.unsigned_at(values - width, width, &size) ||
      !r.unsigned_at(values - 2 * width, width, &keys_width) || !valid_width(keys_width) ||
      !r.deref(values - 3 * width, width, &keys) || size > len) {
    return false;
  }
  const uint8_t* types = values + size * width;
  for (uint64_t i = 0; i < size; ++i) {
    const uint8_t* name = nullptr;
    if (!r.deref(keys + i * keys_width, keys_width, &name)) return false;
    const size_t room = static_cast<size_t>(buf + len - name);
    if (memchr(name, 0, room) == nullptr) return false;  // the key ends inside the buffer
    if (strcmp(reinterpret_cast<const char*>(name), key) != 0) continue;
    if (!r.in_range(types + i, 1)) return false;
    return scalar(r, values + i * width, width, types[i], out);
  }
  return false;
}

namespace {

// Reads `key` into *out when lo <= value <= hi; else a message (static text).
const char* get(const uint8_t* buf, size_t len, const char* key, int64_t lo, int64_t hi,
                int64_t* out) {
  if (!flex_int(buf, len, key, out)) return key;  // the caller says "missing"
  return (*out < lo || *out > hi) ? key : nullptr;
}

}  // namespace

// Each parser returns the name of the first option missing or out of range.
const char* parse_window(const uint8_t* buf, size_t len, WindowOptions* o) {
  int64_t v = 0;
  const char* bad = get(buf, len, "shift", 0, 30, &v);
  o->shift = static_cast<int32_t>(v);
  return bad;
}

const char* parse_rfft(const uint8_t* buf, size_t len, RfftOptions* o) {
  int64_t v = 0;
  if (const char* bad = get(buf, len, "T", 7, 7, &v)) return bad;  // int16 only
  const char* bad = get(buf, len, "fft_length", 8, 4096, &v);
  o->fft_length = static_cast<int32_t>(v);
  return bad ? bad : (rfft_bytes(o->fft_length) == 0 ? "fft_length" : nullptr);
}

const char* parse_energy(const uint8_t* buf, size_t len, EnergyOptions* o) {
  int64_t a = 0, b = 0;
  if (const char* bad = get(buf, len, "start_index", 0, 2049, &a)) return bad;
  const char* bad = get(buf, len, "end_index", a, 2049, &b);
  o->start_index = static_cast<int32_t>(a);
  o->end_index = static_cast<int32_t>(b);
  return bad;
}

const char* parse_filter_bank(const uint8_t* buf, size_t len, FilterBankOptions* o) {
  int64_t v = 0;
  const char* bad = get(buf, len, "num_channels", 1, 128, &v);
  o->num_channels = static_cast<int32_t>(v);
  return bad;
}

const char* parse_subtraction(const uint8_t* buf, size_t len, SubtractionOptions* o) {
  int64_t v[8] = {};
  const char* keys[] = {"num_channels", "smoothing_bits", "spectral_subtraction_bits",
                        "smoothing", "one_minus_smoothing", "alternate_smoothing",
                        "alternate_one_minus_smoothing", "min_signal_remaining"};
  const int64_t hi[] = {128, 16, 16, 1 << 16, 1 << 16, 1 << 16, 1 << 16, 1 << 16};
  for (int i = 0; i < 8; ++i) {
    if (const char* bad = get(buf, len, keys[i], i == 0 ? 1 : 0, hi[i], &v[i])) return bad;
  }
  int64_t clamp = 0;
  if (const char* bad = get(buf, len, "clamping", 0, 1, &clamp)) return bad;
  o->num_channels = static_cast<int32_t>(v[0]);
  o->smoothing_bits = static_cast<int32_t>(v[1]);
  o->spectral_subtraction_bits = static_cast<int32_t>(v[2]);
  o->smoothing = static_cast<uint32_t>(v[3]);
  o->one_minus_smoothing = static_cast<uint32_t>(v[4]);
  o->alternate_smoothing = static_cast<uint32_t>(v[5]);
  o->alternate_one_minus_smoothing = static_cast<uint32_t>(v[6]);
  o->min_signal_remaining = static_cast<uint32_t>(v[7]);
  o->clamping = clamp != 0;
  return nullptr;
}

const char* parse_pcan(const uint8_t* buf, size_t len, PcanOptions* o) {
  int64_t v = 0;
  const char* bad = get(buf, len, "snr_shift", 0, 31, &v);
  o->snr_shift = static_cast<int32_t>(v);
  return bad;
}

const char* parse_log(const uint8_t* buf, size_t len, LogOptions* o) {
  int64_t a = 0, b = 0;
  if (const char* bad = get(buf, len, "input_correction_bits", 0, 31, &a)) return bad;
  const char* bad = get(buf, len, "output_scale", 1, 1 << 16, &b);
  o->input_correction_bits = static_cast<int32_t>(a);
  o->output_scale = static_cast<int32_t>(b);
  return bad;
}

}  // namespace msig

namespace msig {

const char* check_filter_bank(const FilterBankTables& t, int num_channels, int weight_count,
                              const int channel_counts[3], int lo, int hi) {
  for (int i = 0; i < 3; ++i) {
    if (channel_counts[i] != num_channels + 1) return "channel tables are not num_channels + 1 long";
  }
  for (int c = 0; c <= num_channels; ++c) {
    const int first = t.frequency_starts[c], w0 = t.weight_starts[c], width = t.widths[c];
    if (width < 0 || first < 0 || w0 < 0) return "negative channel start or width";
    if (width > 0 && (first < lo || first + width > hi || w0 + width > weight_count)) {
      return "a channel reads past the spectrum or the weights";
    }
  }
  return nullptr;
}

}  // namespace msig
