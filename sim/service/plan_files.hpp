#pragma once
// The files `plan --write PREFIX` writes: PREFIX.model.json (the model annotated with the best
// split) and PREFIX.scenario.json (for ipusim run), checked before the search and written after.
#include <ostream>
#include <string>

#include "sim/search/planner.hpp"

namespace ipusim::service {

// PREFIX must name a file in a folder, not a folder ("out/", hidden files inside it) nor a device
// or FIFO ("/dev/null", files created beside it in /dev); neither file may exist unless `force`.
// Throws cli.bad-value (or write_output's rules) before any search.
void check_plan_files(const std::string& prefix, bool force);

// Writes the best candidate `best` (run as `best_scenario`) of the plan of `base`, and says so on `out`.
void write_plan_files(const std::string& prefix, bool force, std::ostream& out, const Scenario& base,
                      const Scenario& best_scenario, const Candidate& best);

} // namespace ipusim::service
