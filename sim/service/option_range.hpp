#pragma once
// An option's inclusive range, which each front end checks as it reads the option (the CLI's
// flags, the Python module's keywords), so that both refuse a value outside it alike.

namespace ipusim::service {

template <class T>
struct OptionRange {
  T min, max;
};

} // namespace ipusim::service
