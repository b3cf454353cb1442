#include "sim/cost/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim {

const std::vector<CostModelInfo>& cost_models() {
  static const std::vector<CostModelInfo> registry{
      {"tile", "BSP superstep per op: compute over the usable tiles + on-chip exchange of its inputs + a tile sync",
       &make_tile_cost_model},
      {"compute", "compute over the usable tiles only: no exchange, no sync (a lower bound)",
       &make_compute_cost_model},
  };
  return registry;
}

std::unique_ptr<CostModel> make_cost_model(const std::string& name, const IpuSpec& ipu) {
  for (const auto& info : cost_models())
    if (info.name == name) return info.make(ipu);
  return nullptr;
}

std::string cost_model_names() {
  std::string out;
  for (const auto& info : cost_models()) out += (out.empty() ? "" : ", ") + info.name;
  return out;
}

double tiles_used(const OpWork& work, const IpuSpec& ipu) {
  const double by_grain = std::floor(work.parallel_elements / static_cast<double>(ipu.min_elements_per_tile));
  return std::clamp(by_grain, 1.0, static_cast<double>(ipu.tiles));
}

namespace {

double compute_cycles(const OpWork& work, const IpuSpec& ipu) {
  return work.flops /
         (tiles_used(work, ipu) * ipu.flops_per_cycle_per_tile(work.dtype) * ipu.efficiency_for(work.op_type));
}

class TileCostModel final : public CostModel {
public:
  explicit TileCostModel(const IpuSpec& ipu) : ipu_(ipu) {}
  double seconds(const OpWork& work) const override {
    const double exchange = work.input_bytes / tiles_used(work, ipu_) / ipu_.exchange_bytes_per_cycle_per_tile;
    return (compute_cycles(work, ipu_) + exchange + ipu_.sync_cycles) / ipu_.clock_hz;
  }

private:
  IpuSpec ipu_;
};

class ComputeCostModel final : public CostModel {
public:
  explicit ComputeCostModel(const IpuSpec& ipu) : ipu_(ipu) {}
  double seconds(const OpWork& work) const override { return compute_cycles(work, ipu_) / ipu_.clock_hz; }

private:
  IpuSpec ipu_;
};

} // namespace

std::unique_ptr<CostModel> make_tile_cost_model(const IpuSpec& ipu) { return std::make_unique<TileCostModel>(ipu); }
std::unique_ptr<CostModel> make_compute_cost_model(const IpuSpec& ipu) {
  return std::make_unique<ComputeCostModel>(ipu);
}

} // namespace ipusim
