#pragma once
// What `plan` checks before it searches: every check `run` makes of the system (replicas
// and placement for the pipeline width planned), and the size of the search itself, which
// is announced and refused (plan.too-large) when it would not finish in bounded memory and
// time (docs/planner.md).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"

namespace ipusim::cli {

struct PlanSearchSize {
  int ipus = 0;           // pipeline width planned
  int units = 0;          // layers (or ops) to split
  double candidates = 0;  // splits x head placements x recomputation x G values
  double bytes = 0, seconds = 0;  // the search's estimate
};

// `plan --write PREFIX` writes PREFIX.model.json and PREFIX.scenario.json: PREFIX must name a
// file in a folder, not a folder ("out/", hidden files inside it) nor a device or FIFO
// ("/dev/null", files created beside it in /dev). Throws cli.bad-value.
void check_write_prefix(const std::string& prefix);

// Throws InputError (scenario.not-enough-ipus, scenario.bad-placement, plan.too-large);
// a large search is announced on `notes`.
PlanSearchSize check_plan_inputs(const Scenario& scenario, int ipus, const std::vector<std::int64_t>& gs,
                                 std::ostream* notes);

} // namespace ipusim::cli
