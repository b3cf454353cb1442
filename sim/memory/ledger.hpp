#pragma once
// The memory report's building blocks, shared by the pipelined/sharded estimate (memory.cpp)
// and the phased one (phased_memory.cpp). Internal to sim/memory.
#include <string>
#include <vector>

#include "sim/memory/memory.hpp"

namespace ipusim {

// One IPU's categories: bytes on the whole IPU and on its fullest tile.
class Ledger {
public:
  Ledger(const IpuSpec& ipu, const Model& model) : ipu_(ipu), model_(model) {}

  // `copies` of the tensor, each laid out on its own (a stash's slots): one product, not a
  // sum per copy, so that a stash of G slots costs no more than one of two.
  void add_tensor(const std::string& category, const std::string& tensor, double bytes, double copies = 1) {
    add(category, copies * bytes, copies * tile0_share(bytes, dtype_bytes(model_.tensor(tensor).dtype), ipu_));
  }
  void add(const std::string& category, double bytes, double tile_bytes) {
    auto& c = entry(category);
    c.bytes += bytes;
    c.tile_bytes += tile_bytes;
  }
  MemoryCategory& entry(const std::string& category) {
    for (auto& c : categories_)
      if (c.name == category) return c;
    categories_.push_back({category, 0, 0});
    return categories_.back();
  }
  std::vector<MemoryCategory> categories() const { return categories_; }
  // The IPU's memory with these categories and their totals.
  IpuMemory finish(int id) const {
    IpuMemory out;
    out.id = id;
    out.categories = categories_;
    for (const auto& c : out.categories) {
      out.total_bytes += c.bytes;
      out.fullest_tile_bytes += c.tile_bytes;
    }
    return out;
  }

private:
  const IpuSpec& ipu_;
  const Model& model_;
  std::vector<MemoryCategory> categories_;
};

// The fixed order of categories in every report.
inline constexpr const char* kMemoryCategories[] = {"weights", "gradient accumulators", "optimizer state", "activations",
                                                    "matmul temporaries", "stash", "host stream buffers",
                                                    "code and control"};

// Stages on one IPU run one after another: the live activations peak in one of them.
// `slices`: the micro-batch runs in this many slices (batch serialisation), one slice live at a time.
void add_live_activations(Ledger& ledger, const Scenario& sc, const Plan& plan, const std::vector<int>& stages,
                          double slices = 1);
// The host streams' buffers of these stages.
void add_host_stream_buffers(Ledger& ledger, const Scenario& sc, const Plan& plan, const std::vector<int>& stages);
// Code and control of the ops of these stages, outlined ops once.
void add_code(Ledger& ledger, const Scenario& sc, const Plan& plan, const std::vector<int>& stages);
// The per-tensor optimizer state of `weight` when it is kept on chip (nothing when streamed).
void add_optimizer_state(Ledger& ledger, const Scenario& sc, const std::string& weight);

MemoryReport estimate_phased_memory(const Scenario& scenario, const Plan& plan);

} // namespace ipusim
