#pragma once
// Memory per IPU and per tile for one run: weights, gradient accumulators, optimizer
// state, activations live within a stage, stashes (per the schedule's micro-batches in
// flight), host stream buffers, and code. Tensors are spread over tiles with a grain,
// starting from tile 0, so the report gives each IPU's total and its fullest tile
// against SRAM per tile. An estimate, documented in docs/memory.md.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/stash_peaks.hpp"

namespace ipusim {

struct MemoryCategory {
  std::string name;        // "weights", "stash", ...
  double bytes = 0;        // on the whole IPU
  double tile_bytes = 0;   // on its fullest tile (tile 0)
};

struct IpuMemory {
  int id = 0;
  double total_bytes = 0;
  double capacity_bytes = 0;          // tiles x SRAM per tile
  double fullest_tile_bytes = 0;
  double tile_capacity_bytes = 0;     // SRAM per tile
  bool fits = true;                   // the fullest tile fits in its SRAM
  std::vector<MemoryCategory> categories;  // fixed order, see memory.cpp
};

struct StageStash {
  int stage = 0;             // forward stage
  int ipu = 0;
  int depth = 0;             // micro-batches held at once
  double slot_bytes = 0;     // one micro-batch's stashed tensors
};

// A setting that would make a configuration fit (or bring it closer), as sim/search's
// memory_fixes finds it with this memory model.
struct MemoryFix {
  std::string setting;      // "recomputation"
  std::string change;       // "pipeline recomputation (now none)"
  std::string how;          // "--set execution.recomputation=pipeline"
  bool fits = false;        // the whole configuration fits with this change alone
  double freed_bytes = 0;   // on the fullest tile of the IPU that overflows most (re-splits: its headroom gained)
  double step_change = 0;   // relative change of the step time; NaN when not estimated
};

struct MemoryReport {
  bool fits = true;
  std::vector<IpuMemory> ipus;
  std::vector<StageStash> stashes;
  std::vector<MemoryFix> fixes;  // when it does not fit and the caller asked (run, validate, plan)
};

// `stash_depth[s]`: micro-batches forward stage s keeps for its backward (0: none).
// `recompute`: only a stage's recomputation stash is kept (the run's schedule says).
// `mirrors`: forward stages the schedule also runs on another IPU, with their own weights and stash.
// `at_once`: for IPUs whose schedule knows when its stages' stashes peak together (an order's),
// the moments that may be the peak: the IPU's stash is the moment with the most bytes, not the
// sum of its stages' own peaks, which the report's per-stage stashes still show.
MemoryReport estimate_memory(const Scenario& scenario, const Plan& plan, const std::vector<int>& stash_depth,
                             bool recompute, const std::vector<StageMirror>& mirrors = {},
                             const std::vector<IpuStashPeaks>& at_once = {});

// The share of a buffer of `bytes` on its fullest tile (tile 0), as the report spreads it.
double tile0_share(double bytes, std::int64_t element_bytes, const IpuSpec& ipu);
// What makes two ops the same code (PopART outlines them into one copy).
std::string code_signature(const Model& model, const Op& op);

// `ipu` (its totals set) with its capacities and verdict, appended to the report.
void add_to_report(MemoryReport& report, IpuMemory ipu, const IpuSpec& spec);

// "IPU0 does not fit: its fullest tile needs 700 KiB of 624 KiB; largest: stash 300 KiB, ..."
std::string out_of_memory_verdict(const IpuMemory& ipu, bool replicated_or_placed = false);

// "would fit with: pipeline recomputation (--set ...; frees 120 KiB per tile, +25 % step time); ..."
std::string fixes_sentence(const std::vector<MemoryFix>& fixes, std::size_t at_most = 3);

} // namespace ipusim
