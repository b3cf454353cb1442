#pragma once
// Turns an op's work into cycles on one IPU. Implementations are chosen by name from
// the scenario ("costModel"), like Ramulator's components: the registry below lists
// them with a description, and adding one is a new file plus a line in the registry.
#include <memory>
#include <string>
#include <vector>

#include "sim/cost/op_work.hpp"
#include "sim/io/hardware.hpp"

namespace ipusim {

// Where an op's time goes on the busiest tile, and the temporary memory it needs there.
struct OpCost {
  double compute_cycles = 0;   // vertices running on the tile's workers (or its AMP)
  double exchange_cycles = 0;  // on-chip exchange phases bringing operands and partials
  double sync_cycles = 0;      // the IPU-wide syncs ending each compute set
  double temp_bytes_per_tile = 0;
  // Of a backward's cycles, those of the weight gradient (W: what no other stage waits for;
  // zero-bubble schedules run it later). The rest is B, the gradient of the input. Included
  // in the three above, not added to them.
  double weight_gradient_cycles = 0;

  double cycles() const { return compute_cycles + exchange_cycles + sync_cycles; }
  // Parts of one op run one after another; their temporaries do not coexist.
  OpCost& operator+=(const OpCost& other);
};

// The same part run `times` times, one after another: cycles add, temporaries do not.
OpCost operator*(OpCost cost, double times);

// Execution options that change how an IPU runs an op, named as PopART names them.
struct CostOptions {
  DType partials = DType::Float32;           // partialsTypeMatMuls
  double available_memory_proportion = 0.6;  // of a tile's SRAM for matmul/conv temporaries
  int io_tiles = 0;                          // numIOTiles: tiles kept for host streams, not compute
};

class CostModel {
public:
  explicit CostModel(const IpuSpec& ipu) : clock_hz_(ipu.clock_hz) {}
  virtual ~CostModel() = default;
  virtual OpCost cost(const OpWork& work) const = 0;
  double seconds(const OpWork& work) const { return cost(work).cycles() / clock_hz_; }

private:
  double clock_hz_;
};

struct CostModelInfo {
  std::string name;
  std::string description;
  std::unique_ptr<CostModel> (*make)(const IpuSpec& ipu, const CostOptions& options);
};

const std::vector<CostModelInfo>& cost_models();
// Returns nullptr for an unknown name; callers report it against their own input.
std::unique_ptr<CostModel> make_cost_model(const std::string& name, const IpuSpec& ipu,
                                           const CostOptions& options = {});
std::string cost_model_names();

// The tiles an op spreads over in the FLOP models: one per minElementsPerTile output elements.
double tiles_used(const OpWork& work, const IpuSpec& ipu);

std::unique_ptr<CostModel> make_tile_cost_model(const IpuSpec& ipu, const CostOptions& options);
std::unique_ptr<CostModel> make_compute_cost_model(const IpuSpec& ipu, const CostOptions& options);
std::unique_ptr<CostModel> make_poplibs_cost_model(const IpuSpec& ipu, const CostOptions& options);

} // namespace ipusim
