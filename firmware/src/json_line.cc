#include "json_line.h"

#include <string.h>

#include "port.h"

namespace mcunas {

namespace {
const char kPrefix[] = "MCUNAS/1 ";
}

JsonLine::JsonLine(const char* event) : depth_(0) {
  raw(kPrefix);
  raw("{");
  first_[0] = true;
  closer_[0] = '}';
  str("event", event);
}

void JsonLine::raw(const char* text) { port_write(text, strlen(text)); }

void JsonLine::separator() {
  if (!first_[depth_]) raw(",");
  first_[depth_] = false;
}

void JsonLine::quoted(const char* text) {
  static const char kHex[] = "0123456789abcdef";
  raw("\"");
  for (const char* p = text ? text : ""; *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      const char esc[3] = {'\\', static_cast<char>(c), 0};
      raw(esc);
    } else if (c < 0x20) {
      const char esc[7] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15], 0};
      raw(esc);
    } else {
      port_write(p, 1);
    }
  }
  raw("\"");
}

void JsonLine::key(const char* name) {
  separator();
  if (name != nullptr) {
    quoted(name);
    raw(":");
  }
}

void JsonLine::digits(uint64_t value) {
  char buf[21];
  int i = sizeof(buf) - 1;
  buf[i] = 0;
  do {
    buf[--i] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && i > 0);
  raw(&buf[i]);
}

JsonLine& JsonLine::str(const char* name, const char* value) {
  key(name);
  quoted(value);
  return *this;
}

JsonLine& JsonLine::num(const char* name, uint64_t value) {
  key(name);
  digits(value);
  return *this;
}

JsonLine& JsonLine::tenths(const char* name, uint64_t value) {
  key(name);
  digits(value / 10);
  const char frac[3] = {'.', static_cast<char>('0' + value % 10), 0};
  raw(frac);
  return *this;
}

JsonLine& JsonLine::hex32(const char* name, uint32_t value) {
  static const char kHex[] = "0123456789abcdef";
  char buf[9];
  for (int i = 7; i >= 0; --i) {
    buf[i] = kHex[value & 15];
    value >>= 4;
  }
  buf[8] = 0;
  return str(name, buf);
}

JsonLine& JsonLine::boolean(const char* name, bool value) {
  key(name);
  raw(value ? "true" : "false");
  return *this;
}

JsonLine& JsonLine::begin_object(const char* name) {
  key(name);
  raw("{");
  if (depth_ + 1 < kMaxDepth) {
    ++depth_;
    first_[depth_] = true;
    closer_[depth_] = '}';
  }
  return *this;
}

JsonLine& JsonLine::begin_array(const char* name) {
  key(name);
  raw("[");
  if (depth_ + 1 < kMaxDepth) {
    ++depth_;
    first_[depth_] = true;
    closer_[depth_] = ']';
  }
  return *this;
}

JsonLine& JsonLine::end_object() {
  if (depth_ > 0) {
    raw("}");
    --depth_;
  }
  return *this;
}

JsonLine& JsonLine::end_array() {
  if (depth_ > 0) {
    raw("]");
    --depth_;
  }
  return *this;
}

void JsonLine::end() {
  while (depth_ >= 0) {
    const char close[2] = {closer_[depth_], 0};
    raw(close);
    --depth_;
  }
  raw("\n");
}

}  // namespace mcunas
