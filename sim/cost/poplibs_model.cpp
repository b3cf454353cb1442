// The "poplibs" cost model: each op as poplibs runs it, by op family (op_families.hpp).
// An op whose FLOPs the model file declares is taken at its word: its FLOPs over the
// tiles at the configured efficiency, plus the exchange of its inputs and a sync.
#include <algorithm>
#include <map>

#include "sim/cost/op_families.hpp"

namespace ipusim {

namespace {

using Family = OpCost (*)(const TileContext&, const OpWork&);

const std::map<std::string, Family>& families() {
  static const std::map<std::string, Family> table{
      {"MatMul", &matmul_family},
      {"Gemm", &matmul_family},
      {"Conv", &matmul_family},
      {"Add", &elementwise_family},
      {"Sub", &elementwise_family},
      {"Mul", &elementwise_family},
      {"Div", &elementwise_family},
      {"Max", &elementwise_family},
      {"Min", &elementwise_family},
      {"Sum", &elementwise_family},
      {"Relu", &elementwise_family},
      {"Neg", &elementwise_family},
      {"Sqrt", &elementwise_family},
      {"Exp", &elementwise_family},
      {"Log", &elementwise_family},
      {"Abs", &elementwise_family},
      {"Reciprocal", &elementwise_family},
      {"Erf", &elementwise_family},
      {"Tanh", &elementwise_family},
      {"Sigmoid", &elementwise_family},
      {"Gelu", &elementwise_family},
      {"Scale", &elementwise_family},
      {"Cast", &elementwise_family},
      {"Identity", &elementwise_family},
      {"Dropout", &elementwise_family},
      {"Softmax", &normalisation_family},
      {"LayerNorm", &normalisation_family},
      {"GroupNorm", &normalisation_family},
      {"BatchNormalization", &normalisation_family},
      {"Reshape", &data_movement_family},
      {"Transpose", &data_movement_family},
      {"Flatten", &data_movement_family},
      {"Squeeze", &data_movement_family},
      {"Unsqueeze", &data_movement_family},
      {"Concat", &data_movement_family},
      {"Slice", &data_movement_family},
      {"Gather", &data_movement_family},
      {"ReduceSum", &reduction_family},
      {"ReduceMean", &reduction_family},
      {"GlobalAveragePool", &reduction_family},
      {"MaxPool", &reduction_family},
      {"AveragePool", &reduction_family},
      {"SoftmaxCrossEntropy", &loss_family},
      {"NllLoss", &loss_family},
      {"L1Loss", &loss_family},
      {"MSELoss", &loss_family},
  };
  return table;
}

class PoplibsCostModel final : public CostModel {
public:
  PoplibsCostModel(const IpuSpec& ipu, const CostOptions& options)
      : CostModel(ipu), ipu_(ipu),
        ctx_{ipu_, ipu_.tile, static_cast<double>(std::max<std::int64_t>(1, ipu.tiles - options.io_tiles)),
             options.available_memory_proportion * static_cast<double>(ipu.sram_bytes_per_tile), options.partials} {}

  OpCost cost(const OpWork& work) const override {
    if (work.pass == Pass::Update) return weight_update_family(ctx_, work);
    auto family = families().find(work.op_type);
    if (work.declared_flops || family == families().end()) return declared(work);
    return family->second(ctx_, work);
  }

private:
  OpCost declared(const OpWork& work) const {
    const double tiles = std::min(ctx_.tiles, tiles_used(work, ipu_));
    const double compute = work.flops / (tiles * ipu_.flops_per_cycle_per_tile(work.dtype) *
                                         ipu_.efficiency_for(work.op_type));
    return compute_set(ctx_, compute, work.input_bytes / tiles);
  }

  IpuSpec ipu_;
  TileContext ctx_;
};

} // namespace

std::unique_ptr<CostModel> make_poplibs_cost_model(const IpuSpec& ipu, const CostOptions& options) {
  return std::make_unique<PoplibsCostModel>(ipu, options);
}

} // namespace ipusim
