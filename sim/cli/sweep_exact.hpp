#pragma once
// `ipusim sweep --fast`: a point's figures from the exact evaluators, without a simulation.
#include <nlohmann/json.hpp>
#include <memory>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph/model_graph.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/scenario.hpp"

namespace ipusim::cli {

// The point's report: `run --json`'s document without the simulation's figures (the
// scenario, its files and hashes, the execution, the plan and the estimate, as `run` gives
// them), with `runs` holding per mode the step time, throughputs, samples, micro-batches,
// replicas and memory, and `speedupPipelinedOverSharded` with both modes; when every mode
// it runs (`modes` as `run --mode`, "" = the scenario's) has an evaluator that is exact for
// it. nullopt when not, or when the point's input is bad or its run would print a warning:
// the engine runs those points.
std::optional<nlohmann::json> exact_point_report(const std::string& scenario_file, const std::string& modes,
                                                 const std::vector<Override>& overrides);

// exact_point_report for the points of one sweep: the scenario as loaded with the overrides
// that do not lie under "execution." is kept, so that a point that changes only the
// execution reads only that (the model and config are not parsed, checked or hashed again).
class ExactPointEvaluator {
public:
  ExactPointEvaluator();
  ~ExactPointEvaluator();
  std::optional<nlohmann::json> operator()(const std::string& scenario_file, const std::string& modes,
                                           const std::vector<Override>& overrides);
  // The wall time estimate_run gives the point's simulations (0 for a point whose input is
  // bad): the sweep runs its points longest first.
  double estimated_seconds(const std::string& scenario_file, const std::string& modes,
                           const std::vector<Override>& overrides);

private:
  struct Loaded;
  // Calls `use` with the point's scenario and model graph, the scenario loaded once for every
  // point that changes only execution fields.
  template <class F>
  auto with_point(const std::string& scenario_file, const std::vector<Override>& overrides, F&& use)
      -> decltype(use(std::declval<const Scenario&>(), std::declval<const ModelGraph&>()));
  std::unique_ptr<Loaded> loaded_;
};

} // namespace ipusim::cli
