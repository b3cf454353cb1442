#pragma once
// What `ipusim plan` prints: the search's summary, the top K confirmed by the engine with why
// each loses to the first, the fronts, the comparison with the scenario's own configuration,
// and the advice when nothing fits.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/metrics/metrics.hpp"
#include "sim/search/planner.hpp"

namespace ipusim::service {

struct ConfirmedPlans {
  std::vector<Candidate> candidates;  // best first by the engine's figures
  std::vector<RunMetrics> metrics;
  std::vector<Scenario> scenarios;    // each candidate's, as the engine ran it
  Candidate best;
  Scenario best_scenario;
  double largest_run_estimate = 0;  // bytes: the largest of their runs' memory estimates (estimate_run)
};

void print_search_summary(std::ostream& out, const Scenario& scenario, const PlanSearch& search);
// The memory the plan announces: its search's (ipusim's base included) before it starts, and
// the engine runs' after them ("memory: ..." lines that tests/fuzz/run_campaign.py reads).
void print_search_estimate(std::ostream& out, double search_bytes, const PlanSearchEstimate& estimate);
void print_runs_estimate(std::ostream& out, double largest_run_bytes);
// The scenario a candidate describes, ready for the engine (its group size's model re-annotated).
using CandidateScenario = std::function<Scenario(const Candidate&)>;

// Simulates the top K (the engine's streaming metrics, no event log) and prints them.
ConfirmedPlans confirm_top(std::ostream& out, const Scenario& scenario, const PlanSearch& search, Objective objective,
                           const CandidateScenario& build);
void print_fronts(std::ostream& out, const Scenario& scenario, const PlanSearch& search, Objective objective);
// The what-if schedules' best (searched apart: no IPU framework runs them), confirmed by the
// engine and set against `confirmed`'s best when there is one: in `what_if_best` (empty when
// none fits). Returns its run's memory estimate.
double print_what_if(std::ostream& out, const Scenario& scenario, const PlanSearch& what_if,
                     const ConfirmedPlans* confirmed, Objective objective, const CandidateScenario& build,
                     ConfirmedPlans& what_if_best);
// The scenario as annotated (its own split and settings), simulated, against the best;
// returns its run's memory estimate (0: not run).
double compare_with_given(std::ostream& out, const Scenario& scenario, const LayerStructure& layers,
                        const ConfirmedPlans& confirmed, Objective objective);
// Why nothing fits, and which fixed dimension, if searched, would give a configuration that does.
// `found_elsewhere`: lines "\n  searching ... finds one that fits: ..." the caller found beyond `request`.
std::string no_fit_message(const Scenario& scenario, const PlanSearch& search, const PlanRequest& request,
                           const std::string& found_elsewhere = "");

} // namespace ipusim::service
