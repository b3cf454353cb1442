#pragma once
// Shared by the observers that add up skipped steady-state periods without their events
// (MetricsAccumulator, TimeAttribution): they replay a few periods, compare their state at
// the end of each, and once two periods changed it alike (every time one period later,
// every position one period further, every sum grown by the same amount) they add the
// remaining periods in one go. The comparisons allow for the clock's rounding only.
#include <cmath>
#include <cstdint>
#include <limits>

#include "sim/schedule/program_cursor.hpp"

namespace ipusim::periodic {

// Comparisons made, at most, for each stride before the next is tried; strides (in the
// engine's periods) tried: the metrics of a schedule may repeat only every few of the
// engine's periods (the zero-bubble H2 order's latencies every other one). When none
// matches, the rest are replayed event by event.
inline constexpr std::int64_t kTries = 12;
inline constexpr std::int64_t kMaxStride = 4;

inline double ulp(double x) {
  const double a = std::fabs(x);
  return std::nextafter(a, std::numeric_limits<double>::infinity()) - a;
}

// `b` is `a` one period (`by`) later, up to rounding of the clock (infinities: unchanged).
inline bool shifted(double a, double b, double by) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  const double want = a + by;
  return std::fabs(b - want) <= 64 * ulp(std::fabs(b) + std::fabs(want)) + 1e-15;
}

// The sum grew by the same amount in both periods (a0 -> a1 -> a2).
inline bool same_growth(double a0, double a1, double a2) {
  const double d1 = a1 - a0, d2 = a2 - a1;
  return std::fabs(d2 - d1) <= 1e-11 * std::max(std::fabs(d1), std::fabs(d2)) + 64 * ulp(a2) + 1e-15;
}

// How a cursor moved over one period: not at all (0), or `iterations` iterations of `loop`
// at depth d (d + 1); -1 for anything else.
inline int cursor_moved(const ProgramCursor& a, const ProgramCursor& b, int loop, std::int64_t iterations) {
  if (a.index() != b.index() || a.frames().size() != b.frames().size()) return -1;
  int moved = 0;
  for (std::size_t d = 0; d < a.frames().size(); ++d) {
    const auto &x = a.frames()[d], &y = b.frames()[d];
    if (x.repeat != y.repeat) return -1;
    if (x.iteration == y.iteration) continue;
    if (moved != 0 || a.repeat_of(d).loop != loop || y.iteration - x.iteration != iterations) return -1;
    moved = static_cast<int>(d) + 1;
  }
  return moved;
}

// Whether a cursor that moved at `moved` (cursor_moved) stays inside its loop `periods` more periods on.
inline bool room_for(const ProgramCursor& c, int moved, std::int64_t iterations, std::int64_t periods) {
  if (moved <= 0) return moved == 0;
  const auto d = static_cast<std::size_t>(moved - 1);
  const std::int64_t left = c.repeat_of(d).times - 1 - c.frames()[d].iteration;
  return iterations > 0 && periods <= left / iterations;
}

inline void skip(ProgramCursor& c, int moved, std::int64_t iterations, std::int64_t periods) {
  if (moved > 0) c.skip_iterations(static_cast<std::size_t>(moved - 1), iterations * periods);
}

} // namespace ipusim::periodic
