// Streams one protocol line, `MCUNAS/1 {...}\n`, straight to the serial port
// (no buffer for the whole line, so long op lists cost no RAM).
#ifndef MCUNAS_JSON_LINE_H_
#define MCUNAS_JSON_LINE_H_

#include <stdint.h>

namespace mcunas {

class JsonLine {
 public:
  // Starts the line with the prefix and the "event" key.
  explicit JsonLine(const char* event);
  JsonLine& str(const char* key, const char* value);
  JsonLine& num(const char* key, uint64_t value);
  // A number with one decimal: tenths=12345 prints 1234.5.
  JsonLine& tenths(const char* key, uint64_t tenths);
  JsonLine& hex32(const char* key, uint32_t value);  // "8c2f61a0"
  JsonLine& boolean(const char* key, bool value);
  JsonLine& begin_object(const char* key);  // key nullptr inside an array
  JsonLine& end_object();
  JsonLine& begin_array(const char* key);
  JsonLine& end_array();
  // Closes every open bracket and ends the line.
  void end();

 private:
  void separator();
  void key(const char* name);
  void raw(const char* text);
  void quoted(const char* text);
  void digits(uint64_t value);

  static const int kMaxDepth = 6;
  bool first_[kMaxDepth];
  char closer_[kMaxDepth];
  int depth_;
};

}  // namespace mcunas

#endif  // MCUNAS_JSON_LINE_H_
