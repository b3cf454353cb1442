#pragma once
// The search over splits and availableMemoryProportion per IPU for one point of the outer
// dimensions (planner.hpp). IPU i's memory and work are known exactly once its block is, so a
// dynamic program over (IPU, first layer left) gives, for every suffix of IPUs, whether the
// layers left can be placed so that each of those IPUs fits, and bounds on what the suffix can
// reach: the least possible busiest IPU, the least total work, the most headroom. A depth-first
// walk then fills IPU 0, 1, ... in order of those bounds, prunes a partial split whose bound
// cannot enter the answer, and composes and times each complete split.
#include <functional>

#include "sim/schedule/schedule.hpp"
#include "sim/search/incumbents.hpp"
#include "sim/search/planner.hpp"

namespace ipusim {

class SplitSearch {
public:
  SplitSearch(const Scenario& scenario, const PlanSpace& space, const SplitCosts& table, const PlanSettings& settings,
              Objective objective, bool prune, RouteTable& routes);

  // An upper bound on the score of every candidate of this point: from perfect balance, or
  // once refined from the dynamic program (0 when no split fits).
  double bound() const { return bound_; }
  double headroom_bound() const { return headroom_bound_; }
  bool refined() const { return refined_; }
  std::int64_t global_batch() const { return global_batch_; }
  const PlanSettings& settings() const { return settings_; }
  // Runs the dynamic program: the bounds become those of the best splits that fit.
  void refine(SearchCounts& counts);
  // Walks the splits; `stop` is asked now and then and ends the walk when it says so.
  // Returns false when stopped.
  bool run(Incumbents& incumbents, SearchCounts& counts, const std::function<bool()>& stop);
  // Frees the per-block tables (kept between refine and run otherwise).
  void release();
  // Upper bounds of the bytes one point holds: always (the object and its per-IPU and per-unit
  // vectors), and while refined (its option and suffix tables filled in full); bytes_held()
  // counts the same as they are.
  static double resident_bound(int ipus, int units, std::size_t amps);
  static double tables_bound(int ipus, int units, std::size_t amps);
  double bytes_held() const;

private:
  struct Option {
    int amp = 0;
    IpuFootprint footprint;
  };
  struct Suffix {  // IPUs i.. holding the layers from u on
    bool ready = false, feasible = false;
    double busiest = 0, total = 0, headroom = 0;
    double forward = 0, backward = 0;  // the least of the IPUs' largest forward and backward work
    std::vector<std::pair<int, int>> moves;  // (layers on IPU i, option index), best bound first
  };
  // Units of IPU `ipu`'s block when it takes `k` layers from layer unit `u`.
  std::pair<int, int> block_of(int ipu, int u, int k) const;
  // The fitting, not dominated availableMemoryProportion choices for that block, cached.
  const std::vector<Option>& options(int ipu, int u, int k);
  const Suffix& solve(int ipu, int u);
  // What the IPUs placed so far give the bounds: the busiest IPU's and the total work per
  // micro-batch, the least headroom, the largest forward and backward work, and PopART's
  // copy phase at least (the slowest cut so far, cut_seconds).
  struct Partial {
    double busiest = 0, total = 0, headroom = 0, forward = 0, backward = 0, copies = 0;
  };
  void walk(int ipu, int u, const Partial& placed);
  // Whether some completion of `now` (IPU `ipu` holding `f` last) by the suffix `next` could enter
  // the answer, by the bounds; fills IPU ipu + 1's fill and flush bounds on the way.
  bool may_enter(int ipu, const IpuFootprint& f, const Partial& now, const Suffix& next);
  // PopART's rule on the units placed so far: no weight or input the layers share on two IPUs
  // (those of the stem and heads are checked per block).
  bool shared_units_together() const;
  // PopART: the least time of the copy from IPU `ipu` to the next when that one begins at unit
  // `v` (SplitCosts::cut_bytes on the slowest replica's route), cached; 0 for other schedules.
  double cut_seconds(int ipu, int v);
  void leaf();
  // `ramps`: a lower bound on PopART's fill and flush cycles (their sum), or negative when none;
  // `passes`: a lower bound on the largest forward plus the largest backward work of an IPU.
  // `copies`: a lower bound on PopART's copy phase, which each of its cycles ends with.
  double score_bound(double busiest, double total, double ramps = -1, double passes = 0, double copies = 0) const;
  // PopART: the fill and flush cycles' lower bounds with IPU `ipu` holding option `o` added.
  void add_ramps(int ipu, const IpuFootprint& f, std::vector<double>& ramps) const;
  // TensorFlow's Grouped: its ramp-up and flush steps' lower bounds with IPU `ipu` holding `f`.
  void add_grouped_ramps(int ipu, const IpuFootprint& f, std::vector<double>& ramps) const;
  double min_work(int first, int last) const;

  const Scenario& sc_;
  const PlanSpace& space_;
  const SplitCosts& table_;
  PlanSettings settings_;
  Objective objective_;
  bool prune_;
  RouteTable& routes_;
  Execution ex_;
  MemorySettings memory_;
  int W_ = 0, L_ = 0, P_ = 0, U_ = 0;
  std::int64_t depth_ = 1, batches_ = 1, global_batch_ = 0;
  double samples_ = 0, fixed_seconds_ = 0, bound_ = 0, headroom_bound_ = 0, tile_capacity_ = 0, capacity_ = 0;
  bool refined_ = false;
  bool ramps_ = false;  // PopART with D >= S: its fill and flush cycles are bounded too
  SplitBound split_bound_ = SplitBound::BusiestIpu;  // the schedule's, from the registry
  bool grouped_ramps_ = false;  // TensorFlow's Grouped in training: its ramp-up and flush steps too
  int S_ = 0;
  std::vector<std::vector<double>> ramp_;  // per depth of the walk: each fill and flush cycle's bound
  double copy_cycles_ = 0;                 // PopART: cycles with a copy phase, batches x (D + S - 1)
  std::vector<double> cut_seconds_;        // per (IPU, unit boundary): cut_seconds, negative until asked
  std::vector<int> stash_;
  std::vector<std::vector<int>> allowed_amps_;  // per IPU
  std::vector<double> unit_prefix_;             // fastest allowed amp, cumulative by unit
  std::vector<char> shares_stem_, shares_heads_;  // units reading a weight or input the stem or heads read
  std::vector<int> ipu_of_unit_;
  std::vector<std::pair<int, int>> chosen_;     // per IPU: layers, option index
  std::vector<std::vector<Option>> option_cache_;
  std::vector<char> option_ready_;
  std::vector<Suffix> suffixes_;
  std::vector<WeightUpdateSchedule> weight_updates_;
  Incumbents* incumbents_ = nullptr;
  SearchCounts* counts_ = nullptr;
  const std::function<bool()>* stop_ = nullptr;
  bool stopped_ = false;
  std::size_t ticks_ = 0;
};

} // namespace ipusim
