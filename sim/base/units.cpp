#include "sim/base/units.hpp"

#include <cmath>
#include <cstdio>

namespace ipusim {

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

namespace {
std::string three_figures(double value) {
  const double a = std::fabs(value);
  return format_fixed(value, a >= 100 ? 1 : a >= 10 ? 2 : 3);
}
} // namespace

std::string format_seconds(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a >= 1) return three_figures(s) + " s";
  if (a >= 1e-3) return three_figures(s * 1e3) + " ms";
  if (a >= 1e-6) return three_figures(s * 1e6) + " us";
  return three_figures(s * 1e9) + " ns";
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return (u == 0 ? format_fixed(b, 0) : three_figures(b)) + " " + units[u];
}

std::string format_rate(double v, const std::string& unit) {
  const double a = std::fabs(v);
  if (a >= 1e9) return three_figures(v / 1e9) + " G" + unit;
  if (a >= 1e6) return three_figures(v / 1e6) + " M" + unit;
  if (a >= 1e3) return three_figures(v / 1e3) + " k" + unit;
  return three_figures(v) + " " + unit;
}

std::string format_percent(double fraction) { return format_fixed(fraction * 100, 1) + " %"; }

std::string format_count(double v) {
  if (std::fabs(v) >= 1e12) return three_figures(v / 1e12) + " T";
  std::string text = format_rate(v, "");
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

} // namespace ipusim
