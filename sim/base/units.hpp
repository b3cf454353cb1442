#pragma once
// Human-readable quantities for tables and messages; JSON output always carries raw SI values.
// On the base floor: memory, simulate and the outputs all format quantities.
#include <string>

namespace ipusim {

std::string format_seconds(double seconds);
std::string format_bytes(double bytes);
std::string format_rate(double per_second, const std::string& unit);
std::string format_percent(double fraction);
std::string format_fixed(double value, int decimals);
// A count with an SI-style suffix and 4 significant digits: 6.738 G, 124.4 M, 950.
std::string format_count(double count);

} // namespace ipusim
