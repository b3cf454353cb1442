#pragma once
// `ipusim sweep --fast`: a point's figures from the exact evaluators, without a simulation.
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/overrides.hpp"

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

private:
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;
};

} // namespace ipusim::cli
