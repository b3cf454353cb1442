#pragma once
// Turns an op's work into seconds on one IPU. Implementations are chosen by name from
// the scenario ("costModel"), like Ramulator's components: the registry below lists
// them with a description, and adding one is a new file plus a line in the registry.
#include <memory>
#include <string>
#include <vector>

#include "sim/cost/op_work.hpp"
#include "sim/io/hardware.hpp"

namespace ipusim {

class CostModel {
public:
  virtual ~CostModel() = default;
  virtual double seconds(const OpWork& work) const = 0;
};

struct CostModelInfo {
  std::string name;
  std::string description;
  std::unique_ptr<CostModel> (*make)(const IpuSpec& ipu);
};

const std::vector<CostModelInfo>& cost_models();
// Returns nullptr for an unknown name; callers report it against their own input.
std::unique_ptr<CostModel> make_cost_model(const std::string& name, const IpuSpec& ipu);
std::string cost_model_names();

// The tiles an op spreads over: one per minElementsPerTile output elements, at most all of them.
double tiles_used(const OpWork& work, const IpuSpec& ipu);

std::unique_ptr<CostModel> make_tile_cost_model(const IpuSpec& ipu);
std::unique_ptr<CostModel> make_compute_cost_model(const IpuSpec& ipu);

} // namespace ipusim
