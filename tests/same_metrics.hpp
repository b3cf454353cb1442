#pragma once
// Two runs' figures compared IPU by IPU and link by link, for runs simulated two ways (steady
// state or mirrors against every step and IPU simulated).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "sim/metrics/metrics.hpp"

namespace ipusim::test {

// The idle time by cause (attribution.hpp) to 1e-9 relative; parts near zero within the
// clock's rounding (1e-12 of the step time).
inline void check_same_attribution(const IpuMetrics& fast, const IpuMetrics& full, double step) {
  const auto same = [&](double a, double b) {
    return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-12 * step;
  };
  INFO("IPU " << full.id);
  CHECK(same(fast.idle.fill_flush_s, full.idle.fill_flush_s));
  CHECK(same(fast.idle.imbalance_s, full.idle.imbalance_s));
  CHECK(same(fast.idle.copy_wait_s, full.idle.copy_wait_s));
  CHECK(same(fast.idle.update_wait_s, full.idle.update_wait_s));
  CHECK(same(fast.idle.turn_wait_s, full.idle.turn_wait_s));
  CHECK(same(fast.update_s, full.update_s));
  CHECK(same(fast.pipeline_work_s, full.pipeline_work_s));
}

// Every IPU's times within 1e-9 of the step time (durations of nanoseconds summed over a clock
// of seconds carry rounding of that order in the full simulation itself), the same bottleneck,
// every link's bytes to 1e-9.
inline void check_same_ipus_and_links(const RunMetrics& fast, const RunMetrics& full) {
  const double step = full.step_time_s;
  const auto same_time = [&](double a, double b) { return std::fabs(a - b) <= 1e-9 * step; };
  const auto same = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); };
  REQUIRE(fast.ipus.size() == full.ipus.size());
  for (std::size_t i = 0; i < full.ipus.size(); ++i) {
    const IpuMetrics &a = fast.ipus[i], &b = full.ipus[i];
    CHECK(a.id == b.id);
    CHECK(a.replica == b.replica);
    CHECK(a.virtual_ipu == b.virtual_ipu);
    CHECK(same_time(a.busy_s, b.busy_s));
    CHECK(same_time(a.host_io_s, b.host_io_s));
    CHECK(same_time(a.streaming_memory_s, b.streaming_memory_s));
    CHECK(same_time(a.exchange_s, b.exchange_s));
    CHECK(same_time(a.sync_s, b.sync_s));
    CHECK(same_time(a.idle_s, b.idle_s));
    CHECK(std::fabs(a.utilization - b.utilization) <= 1e-9);
    check_same_attribution(a, b, step);
  }
  CHECK(fast.bottleneck_ipu == full.bottleneck_ipu);
  CHECK(fast.bottleneck_stage == full.bottleneck_stage);
  REQUIRE(fast.links.size() == full.links.size());
  for (std::size_t i = 0; i < full.links.size(); ++i) {
    CHECK(fast.links[i].name == full.links[i].name);
    CHECK(same(fast.links[i].bytes, full.links[i].bytes));
  }
}

} // namespace ipusim::test
