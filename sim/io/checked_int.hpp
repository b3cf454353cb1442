#pragma once
// Size and count arithmetic in 64 bits that cannot overflow silently: signed overflow is
// undefined behaviour, and a wrapped count is a silently wrong number. Input ranges
// (field_ranges.hpp) keep real inputs far from the limits, so an overflow here is an
// internal fault (std::overflow_error, exit 3), never a wrong result.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ipusim {

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what = "a count") {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error(std::string(what) + " overflows 64 bits");
  return r;
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what = "a count") {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error(std::string(what) + " overflows 64 bits");
  return r;
}

// Narrowing to int (IPU ids, stage ids, cycles) that refuses to truncate.
inline int checked_int(std::int64_t v, const char* what = "a count") {
  if (v < INT32_MIN || v > INT32_MAX) throw std::overflow_error(std::string(what) + " does not fit an int");
  return static_cast<int>(v);
}

} // namespace ipusim
