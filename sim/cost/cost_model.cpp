#include "sim/cost/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace ipusim {

OpCost& OpCost::operator+=(const OpCost& other) {
  compute_cycles += other.compute_cycles;
  exchange_cycles += other.exchange_cycles;
  sync_cycles += other.sync_cycles;
  weight_gradient_cycles += other.weight_gradient_cycles;
  temp_bytes_per_tile = std::max(temp_bytes_per_tile, other.temp_bytes_per_tile);
  return *this;
}

OpCost operator*(OpCost cost, double times) {
  cost.compute_cycles *= times;
  cost.exchange_cycles *= times;
  cost.sync_cycles *= times;
  cost.weight_gradient_cycles *= times;
  return cost;
}

const std::vector<CostModelInfo>& cost_models() {
  static const std::vector<CostModelInfo> registry{
      {"poplibs",
       "the default: each op as poplibs runs it on the tiles; matmuls and convolutions planned over the AMP units "
       "(partitions, padding, exchange, partial-sum reduction), other ops at their vertex cycle rates, every "
       "compute set paying its exchange and sync (docs/cost-model.md)",
       &make_poplibs_cost_model},
      {"tile", "BSP superstep per op: FLOPs over the usable tiles x efficiency + on-chip exchange of its inputs + a sync",
       &make_tile_cost_model},
      {"compute", "FLOPs over the usable tiles x efficiency only: no exchange, no sync (for closed-form tests)",
       &make_compute_cost_model},
  };
  return registry;
}

std::unique_ptr<CostModel> make_cost_model(const std::string& name, const IpuSpec& ipu, const CostOptions& options) {
  for (const auto& info : cost_models())
    if (info.name == name) return info.make(ipu, options);
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
  explicit TileCostModel(const IpuSpec& ipu) : CostModel(ipu), ipu_(ipu) {}
  OpCost cost(const OpWork& work) const override {
    OpCost c;
    c.compute_cycles = compute_cycles(work, ipu_);
    c.exchange_cycles = work.input_bytes / tiles_used(work, ipu_) / ipu_.exchange_bytes_per_cycle_per_tile;
    c.sync_cycles = ipu_.sync_cycles;
    return c;
  }

private:
  IpuSpec ipu_;
};

class ComputeCostModel final : public CostModel {
public:
  explicit ComputeCostModel(const IpuSpec& ipu) : CostModel(ipu), ipu_(ipu) {}
  OpCost cost(const OpWork& work) const override {
    OpCost c;
    c.compute_cycles = compute_cycles(work, ipu_);
    return c;
  }

private:
  IpuSpec ipu_;
};

} // namespace

std::unique_ptr<CostModel> make_tile_cost_model(const IpuSpec& ipu, const CostOptions&) {
  return std::make_unique<TileCostModel>(ipu);
}
std::unique_ptr<CostModel> make_compute_cost_model(const IpuSpec& ipu, const CostOptions&) {
  return std::make_unique<ComputeCostModel>(ipu);
}

} // namespace ipusim
