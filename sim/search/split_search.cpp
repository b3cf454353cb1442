#include "sim/search/split_search.hpp"

#include <algorithm>
#include <array>
#include <tuple>
#include <cmath>
#include <limits>

#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

// Bounds are sums in another order than the evaluators': a margin far above rounding.
constexpr double kMargin = 1e-9;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

} // namespace

SplitSearch::SplitSearch(const Scenario& sc, const PlanSpace& space, const SplitCosts& table, const PlanSettings& st,
                         Objective objective, bool prune, RouteTable& routes)
    : sc_(sc), space_(space), table_(table), settings_(st), objective_(objective), prune_(prune), routes_(routes) {
  const bool training = sc.execution.training;
  ex_ = settings_execution(sc.execution, st, {});
  W_ = st.ipus;
  U_ = table.units();
  L_ = U_ - 2;
  P_ = W_ + (st.heads_on_last ? 0 : 1);
  const ScheduleInfo& schedule = schedule_info(st.schedule);
  const bool popart = schedule.lockstep_cycles;
  split_bound_ = schedule.split_bound;
  depth_ = st.depth;
  batches_ = training ? sc.execution.batches_per_step : 1;
  if (popart && training && st.depth == 1) depth_ = sc.execution.batches_per_step, batches_ = 1;
  global_batch_ = st.micro_batch * st.depth * st.replicas;
  samples_ = static_cast<double>(batches_) * static_cast<double>(depth_) * static_cast<double>(st.micro_batch) * st.replicas;
  const int S = training ? 2 * P_ - 1 : P_;
  S_ = S;
  ramps_ = popart && depth_ >= S;
  grouped_ramps_ = split_bound_ == SplitBound::PassesApart && training && depth_ >= P_;
  // Every evaluator ends the step with the host's turn, which nothing overlaps; PopART's
  // lockstep cycles each end in a sync.
  fixed_seconds_ = sc.hardware.host_link.run_overhead_s;
  if (popart) {
    copy_cycles_ = static_cast<double>(batches_) * static_cast<double>(depth_ + S - 1);
    fixed_seconds_ += copy_cycles_ * sc.hardware.sync_seconds(W_ * st.replicas * st.tensor_parallel);
  }
  stash_ = stash_depths(st.schedule, P_, st.depth, training);
  memory_.recompute = st.recompute;
  memory_.state_on_chip = !st.state_off_chip;
  memory_.shards = st.rts && st.replicas > 1 ? st.replicas : 1;
  tile_capacity_ = static_cast<double>(sc.hardware.ipu.sram_bytes_per_tile);
  capacity_ = tile_capacity_ * static_cast<double>(sc.hardware.ipu.tiles);

  const auto& amps = table.amps();
  std::vector<int> every;
  allowed_amps_.resize(static_cast<std::size_t>(W_));
  for (int i = 0; i < W_; ++i) {
    auto& allowed = allowed_amps_[static_cast<std::size_t>(i)];
    if (space.fixed_amps.empty()) {
      for (int a = 0; a < static_cast<int>(amps.size()); ++a) allowed.push_back(a);
    } else {
      const double v = space.fixed_amps.size() == 1 ? space.fixed_amps.front() : space.fixed_amps[static_cast<std::size_t>(i)];
      allowed.push_back(static_cast<int>(std::find(amps.begin(), amps.end(), v) - amps.begin()));
    }
    for (int a : allowed)
      if (std::find(every.begin(), every.end(), a) == every.end()) every.push_back(a);
  }
  // With the heads back on IPU 0 no layer is in the loss stage: each recomputes its forward.
  const bool layers_recompute = training && st.recompute && !st.heads_on_last;
  unit_prefix_.assign(static_cast<std::size_t>(U_) + 1, 0);
  for (int u = 0; u < U_; ++u) {
    double best = kInfinity;
    for (int a : every) best = std::min(best, table.unit_seconds(u, a, layers_recompute && u != U_ - 1));
    unit_prefix_[static_cast<std::size_t>(u) + 1] = unit_prefix_[static_cast<std::size_t>(u)] + best;
  }
  double busiest = min_work(0, U_ - 1) / W_;
  if (!st.heads_on_last) busiest = std::max(busiest, min_work(0, 0) + min_work(U_ - 1, U_ - 1));
  bound_ = score_bound(busiest, min_work(0, U_ - 1));
  headroom_bound_ = kInfinity;

  shares_stem_.assign(static_cast<std::size_t>(U_), 0);
  shares_heads_ = shares_stem_;
  for (const auto& shared : table.shared_units()) {
    const bool stem = std::find(shared.begin(), shared.end(), 0) != shared.end();
    const bool heads = std::find(shared.begin(), shared.end(), U_ - 1) != shared.end();
    for (int u : shared) {
      if (stem) shares_stem_[static_cast<std::size_t>(u)] = 1;
      if (heads) shares_heads_[static_cast<std::size_t>(u)] = 1;
    }
  }
  // PopART without gradient accumulation updates every micro-batch, in the backward stages.
  if (training && schedule.follows_weight_update_setting && !(popart && st.depth == 1))
    weight_updates_ = space.weight_update;
  else weight_updates_ = {sc.execution.weight_update_schedule};
}

double SplitSearch::min_work(int first, int last) const {
  if (last < first) return 0;
  return unit_prefix_[static_cast<std::size_t>(last) + 1] - unit_prefix_[static_cast<std::size_t>(first)];
}

double SplitSearch::score_bound(double busiest, double total, double ramps, double passes, double copies) const {
  if (objective_ == Objective::Latency) return 1 / (total * (1 - kMargin));
  // Each IPU runs every micro-batch through its stages; TensorFlow's Sequential runs one
  // stage at a time, so there every IPU's work adds up. TensorFlow's Grouped runs every stage's
  // forward in forward steps and every backward in backward steps (tensorflow.cpp): the forward
  // steps take G times the largest forward work of an IPU at least, the backward steps G times
  // the largest backward work.
  double per_micro_batch = split_bound_ == SplitBound::EveryIpu ? total : busiest;
  if (split_bound_ == SplitBound::PassesApart && sc_.execution.training) per_micro_batch = std::max(per_micro_batch, passes);
  double step = static_cast<double>(batches_) * static_cast<double>(depth_) * per_micro_batch;
  // Grouped: the G - N + 1 steps of each pass where every stage runs, and the ramp-up and flush
  // steps as the IPUs known so far bound them (add_grouped_ramps).
  if (grouped_ramps_ && ramps >= 0)
    step = std::max(step, static_cast<double>(batches_) * (ramps + static_cast<double>(depth_ - P_ + 1) * passes));
  // PopART: the D-S+1 main cycles each take the busiest IPU's whole work; each fill and
  // flush cycle at least what the IPUs known so far do in it.
  if (ramps >= 0)
    step = std::max(step, static_cast<double>(batches_) * (ramps + static_cast<double>(depth_ - S_ + 1) * busiest));
  step += fixed_seconds_ + copy_cycles_ * copies;
  return samples_ / (step * (1 - kMargin));
}

std::pair<int, int> SplitSearch::block_of(int ipu, int u, int k) const {
  if (ipu == 0) return {0, k};  // the stem and the first k layers
  if (ipu < W_ - 1) return {u, u + k - 1};
  if (!settings_.heads_on_last) return {u, L_};
  return {k == 0 ? U_ - 1 : u, U_ - 1};
}

const std::vector<SplitSearch::Option>& SplitSearch::options(int ipu, int u, int k) {
  const auto key = static_cast<std::size_t>((ipu * (U_ + 1) + u) * (U_ + 1) + k);
  std::vector<Option>& out = option_cache_[key];
  if (option_ready_[key]) return out;
  option_ready_[key] = 1;
  const auto [first, last] = block_of(ipu, u, k);
  // A weight or host input the stem or the heads read must be on their IPU (PopART's rule).
  const int heads_ipu = settings_.heads_on_last ? W_ - 1 : 0;
  for (int x = first; x <= last; ++x)
    if ((shares_stem_[static_cast<std::size_t>(x)] && ipu != 0) || (shares_heads_[static_cast<std::size_t>(x)] && ipu != heads_ipu)) {
      ++counts_->refused;
      return out;
    }
  std::vector<std::pair<int, int>> stages(static_cast<std::size_t>(P_));
  stages[static_cast<std::size_t>(ipu)] = {first, last};
  if (!settings_.heads_on_last) stages.back() = {U_ - 1, U_ - 1};
  const IpuBlocks blocks = table_.ipu_blocks(stages, ipu, W_, stash_);
  ++counts_->partial_splits;
  const auto& allowed = allowed_amps_[static_cast<std::size_t>(ipu)];
  const std::vector<IpuFootprint> all = table_.footprints(blocks, memory_, allowed);
  std::vector<Option> fitting;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].tile_bytes <= tile_capacity_ && all[i].total_bytes <= capacity_) fitting.push_back({allowed[i], all[i]});
  if (fitting.empty()) ++counts_->out_of_memory;
  // Another value at least as fast in each of the IPU's stages makes this one needless: the
  // evaluators' step times never decrease as a stage's time grows, and an IPU's memory is its
  // own. Of equally fast ones the one with the most headroom stays. (The headroom a slower
  // value would buy on an IPU that paces nothing is taken afterwards: polish_headroom.)
  for (const Option& o : fitting) {
    bool dominated = false;
    for (const Option& p : fitting) {
      if (&p == &o) continue;
      const IpuFootprint &a = p.footprint, &b = o.footprint;
      bool no_worse = true, faster = false;
      for (int block = 0; block < 2; ++block)
        for (int pass = 0; pass < 2; ++pass) {
          no_worse = no_worse && a.stage_seconds[block][pass] <= b.stage_seconds[block][pass];
          faster = faster || a.stage_seconds[block][pass] < b.stage_seconds[block][pass];
        }
      const bool roomier = a.tile_bytes < b.tile_bytes || (a.tile_bytes == b.tile_bytes && p.amp > o.amp);
      dominated = dominated || (no_worse && (faster || roomier));
    }
    if (!dominated) out.push_back(o);
  }
  return out;
}

const SplitSearch::Suffix& SplitSearch::solve(int ipu, int u) {
  Suffix& s = suffixes_[static_cast<std::size_t>(ipu * (L_ + 2) + u)];
  if (s.ready) return s;
  s.ready = true;
  if (ipu == W_) {
    s.feasible = u == L_ + 1;
    s.busiest = s.total = s.forward = s.backward = 0;
    s.headroom = kInfinity;
    return s;
  }
  const bool heads_alone_ok = settings_.heads_on_last && space_.layer_free_ipus && table_.has_heads();
  const int after = W_ - 1 - ipu;
  const int needed_after = after == 0 ? 0 : (after - 1) + (heads_alone_ok ? 0 : 1);
  const int left = L_ - u + 1;
  int lo = ipu == 0 && (space_.layer_free_ipus || space_.stem_alone) && table_.has_stem() ? 0 : 1;
  int hi = ipu == 0 && space_.stem_alone ? 0 : left - needed_after;
  if (ipu == W_ - 1) lo = hi = left;
  if (ipu == W_ - 1 && left == 0 && !heads_alone_ok) hi = -1;
  std::vector<std::pair<double, std::pair<int, int>>> moves;
  s.busiest = s.total = s.forward = s.backward = kInfinity;
  s.headroom = -kInfinity;
  for (int k = lo; k <= hi; ++k) {
    const std::vector<Option>& opts = options(ipu, u, k);
    if (opts.empty()) continue;
    const Suffix& next = solve(ipu + 1, u + k);
    if (!next.feasible) continue;
    for (std::size_t o = 0; o < opts.size(); ++o) {
      const IpuFootprint& f = opts[o].footprint;
      const double busiest = std::max(f.seconds, next.busiest);
      s.feasible = true;
      s.busiest = std::min(s.busiest, busiest);
      s.total = std::min(s.total, f.seconds + next.total);
      s.forward = std::min(s.forward, std::max(f.forward_seconds, next.forward));
      s.backward = std::min(s.backward, std::max(f.backward_seconds, next.backward));
      s.headroom = std::max(s.headroom, std::min(tile_capacity_ - f.tile_bytes, next.headroom));
      moves.push_back({objective_ == Objective::Throughput ? busiest : f.seconds + next.total, {k, static_cast<int>(o)}});
    }
  }
  std::stable_sort(moves.begin(), moves.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& m : moves) s.moves.push_back(m.second);
  return s;
}

void SplitSearch::refine(SearchCounts& counts) {
  counts_ = &counts;
  if (option_cache_.empty()) {
    option_cache_.assign(static_cast<std::size_t>(W_ * (U_ + 1) * (U_ + 1)), {});
    option_ready_.assign(option_cache_.size(), 0);
    suffixes_.assign(static_cast<std::size_t>((W_ + 1) * (L_ + 2)), {});
  }
  const Suffix& top = solve(0, 1);
  refined_ = true;
  if (!top.feasible) {
    bound_ = 0;
    headroom_bound_ = -kInfinity;
    return;
  }
  bound_ = std::min(bound_, score_bound(top.busiest, top.total, -1, top.forward + top.backward));
  headroom_bound_ = top.headroom;
}

void SplitSearch::release() {
  std::vector<std::vector<Option>>().swap(option_cache_);
  std::vector<char>().swap(option_ready_);
  std::vector<Suffix>().swap(suffixes_);
  std::vector<double>().swap(cut_seconds_);
}

bool SplitSearch::run(Incumbents& incumbents, SearchCounts& counts, const std::function<bool()>& stop) {
  incumbents_ = &incumbents;
  stop_ = &stop;
  stopped_ = false;
  refine(counts);
  chosen_.assign(static_cast<std::size_t>(W_), {0, 0});
  if (ramps_) ramp_.assign(static_cast<std::size_t>(W_) + 1, std::vector<double>(static_cast<std::size_t>(2 * (S_ - 1)), 0.0));
  if (grouped_ramps_) ramp_.assign(static_cast<std::size_t>(W_) + 1, std::vector<double>(static_cast<std::size_t>(4 * (P_ - 1)), 0.0));
  ipu_of_unit_.assign(static_cast<std::size_t>(U_), -1);
  if (!settings_.heads_on_last) ipu_of_unit_.back() = 0;
  if (copy_cycles_ > 0) cut_seconds_.assign(static_cast<std::size_t>(W_) * static_cast<std::size_t>(U_ + 1), -1.0);
  Partial none;
  none.headroom = kInfinity;
  if (solve(0, 1).feasible) walk(0, 1, none);
  release();
  return !stopped_;
}

void SplitSearch::add_ramps(int ipu, const IpuFootprint& f, std::vector<double>& ramps) const {
  const bool training = sc_.execution.training;
  const int L = P_ - 1;
  // (stage id, seconds per micro-batch); at most three, kept off the heap (called for
  // every block the walk tries).
  std::array<std::pair<std::int64_t, double>, 3> stages{};
  std::size_t count = 0;
  if (ipu == L) {
    stages[count++] = {ipu, f.stage_seconds[0][0] + f.stage_seconds[0][1]};  // the loss stage does both
  } else {
    stages[count++] = {ipu, f.stage_seconds[0][0]};
    if (training) stages[count++] = {2 * L - ipu, f.stage_seconds[0][1]};
  }
  if (ipu == 0 && !settings_.heads_on_last) stages[count++] = {L, f.stage_seconds[1][0] + f.stage_seconds[1][1]};
  const auto S = static_cast<std::int64_t>(S_);
  for (std::int64_t k = 0; k < 2 * (S - 1); ++k) {
    const std::int64_t c = k < S - 1 ? k : depth_ + (k - (S - 1));
    double segment = 0;
    for (std::size_t i = 0; i < count; ++i)
      if (stages[i].first <= c && c < stages[i].first + depth_) segment += stages[i].second;
    ramps[static_cast<std::size_t>(k)] = std::max(ramps[static_cast<std::size_t>(k)], segment);
  }
}

// Grouped with N forward stages and G micro-batches (tensorflow.cpp lockstep_tasks): forward
// steps 0..G+N-2, stage s running its forwards in steps s..s+G-1; backward steps likewise, stage s
// in N-1-s..N-2-s+G. Every stage runs in steps N-1..G-1 of each pass; the N-1 steps before and
// after are ramps[0..N-2] and [N-1..2N-3] (forward), [2N-2..3N-4] and [3N-3..4N-5] (backward),
// each at least the time of the busiest IPU known so far in that step.
void SplitSearch::add_grouped_ramps(int ipu, const IpuFootprint& f, std::vector<double>& ramps) const {
  const std::int64_t N = P_, G = depth_;
  std::array<std::tuple<std::int64_t, double, double>, 2> stages{};  // off the heap, as add_ramps
  std::size_t count = 0;
  stages[count++] = {ipu, f.stage_seconds[0][0], f.stage_seconds[0][1]};
  if (ipu == 0 && !settings_.heads_on_last) stages[count++] = {N - 1, f.stage_seconds[1][0], f.stage_seconds[1][1]};
  for (std::int64_t k = 0; k < 2 * (N - 1); ++k) {
    const std::int64_t step = k < N - 1 ? k : G + (k - (N - 1));
    double forward = 0, backward = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const auto& [s, fw, bw] = stages[i];
      if (s <= step && step <= s + G - 1) forward += fw;
      if (N - 1 - s <= step && step <= N - 2 - s + G) backward += bw;
    }
    auto& f_ramp = ramps[static_cast<std::size_t>(k)];
    auto& b_ramp = ramps[static_cast<std::size_t>(2 * (N - 1) + k)];
    f_ramp = std::max(f_ramp, forward);
    b_ramp = std::max(b_ramp, backward);
  }
}

void SplitSearch::walk(int ipu, int u, const Partial& placed) {
  if (stopped_) return;
  if (++ticks_ % 256 == 0 && (*stop_)()) {
    stopped_ = true;
    return;
  }
  if (ipu == W_) {
    // A leaf times its candidate exactly, which is linear in G for the asynchronous
    // schedules (0.3 s at G = 2^20): the time limit is checked after each, not only every
    // 256 steps of the walk, so that `plan --time-limit` stops when it says.
    leaf();
    stopped_ = (*stop_)();
    return;
  }
  const Suffix& here = solve(ipu, u);
  for (const auto& [k, index] : here.moves) {
    const Option& o = options(ipu, u, k)[static_cast<std::size_t>(index)];
    const Suffix& next = solve(ipu + 1, u + k);
    Partial now;
    now.busiest = std::max(placed.busiest, o.footprint.seconds);
    now.total = placed.total + o.footprint.seconds;
    now.headroom = std::min(placed.headroom, tile_capacity_ - o.footprint.tile_bytes);
    now.forward = std::max(placed.forward, o.footprint.forward_seconds);
    now.backward = std::max(placed.backward, o.footprint.backward_seconds);
    now.copies = ipu + 1 < W_ ? std::max(placed.copies, cut_seconds(ipu, u + k)) : placed.copies;
    if (!may_enter(ipu, o.footprint, now, next)) {
      ++counts_->bounded;
      continue;
    }
    const auto [first, last] = block_of(ipu, u, k);
    for (int x = first; x <= last; ++x) ipu_of_unit_[static_cast<std::size_t>(x)] = ipu;
    const bool refused = !shared_units_together();
    if (refused) {
      ++counts_->refused;
    } else {
      chosen_[static_cast<std::size_t>(ipu)] = {k, index};
      walk(ipu + 1, u + k, now);
    }
    for (int x = first; x <= last; ++x) ipu_of_unit_[static_cast<std::size_t>(x)] = -1;
    if (!settings_.heads_on_last) ipu_of_unit_.back() = 0;
    if (stopped_) return;
  }
}

bool SplitSearch::may_enter(int ipu, const IpuFootprint& f, const Partial& now, const Suffix& next) {
  const double passes = std::max(now.forward, next.forward) + std::max(now.backward, next.backward);
  const double least_busiest = std::max(now.busiest, next.busiest), least_total = now.total + next.total;
  const double most_headroom = std::min(now.headroom, next.headroom);
  auto worth = [&](double ramps) {
    return !prune_ ||
           incumbents_->worth(score_bound(least_busiest, least_total, ramps, passes, now.copies), most_headroom, global_batch_);
  };
  // The bound without the fill and flush cycles first: it is never below the one with them
  // (score_bound takes the larger step), so what it drops the full bound drops too, and the
  // ramps (a pass over every fill and flush cycle) are summed only for what it keeps.
  if (!worth(-1)) return false;
  if (!ramps_ && !grouped_ramps_) return true;
  auto& mine = ramp_[static_cast<std::size_t>(ipu) + 1];
  mine = ramp_[static_cast<std::size_t>(ipu)];
  if (ramps_) add_ramps(ipu, f, mine);
  else add_grouped_ramps(ipu, f, mine);
  double ramps = 0;
  for (double r : mine) ramps += r;
  return worth(ramps);
}

bool SplitSearch::shared_units_together() const {
  for (const auto& shared : table_.shared_units()) {
    int where = -1;
    for (int x : shared) {
      const int at = ipu_of_unit_[static_cast<std::size_t>(x)];
      if (at < 0) continue;
      if (where >= 0 && at != where) return false;
      where = at;
    }
  }
  return true;
}

double SplitSearch::cut_seconds(int ipu, int v) {
  if (copy_cycles_ <= 0) return 0;
  double& cached = cut_seconds_[static_cast<std::size_t>(ipu) * static_cast<std::size_t>(U_ + 1) + static_cast<std::size_t>(v)];
  if (cached >= 0) return cached;
  // As TransferTimer::copy_seconds times the copy: every replica's at once, the slowest (the
  // planner's candidates have no placement).
  const double bytes = std::floor(table_.cut_bytes(settings_.heads_on_last)[static_cast<std::size_t>(v)]);
  cached = 0;
  if (bytes > 0)
    for (int r = 0; r < settings_.replicas; ++r) {
      const int from = unplaced_ipu(r, ipu, W_, settings_.tensor_parallel);
      const int to = unplaced_ipu(r, ipu + 1, W_, settings_.tensor_parallel);
      cached = std::max(cached, routes_.path(from, to).seconds(bytes));
    }
  return cached;
}

void SplitSearch::leaf() {
  Candidate c;
  c.settings = settings_;
  c.split.heads_on_last = settings_.heads_on_last;
  c.split.units_per_layer = table_.units_per_layer();
  c.global_batch = global_batch_;
  int u = 1;
  for (int i = 0; i < W_; ++i) {
    const auto [k, index] = chosen_[static_cast<std::size_t>(i)];
    const Option& o = options(i, u, k)[static_cast<std::size_t>(index)];
    u += k;
    c.split.layers_per_ipu.push_back(k);
    c.split.amp.push_back(o.amp);
    c.amp.push_back(table_.amps()[static_cast<std::size_t>(o.amp)]);
    const double free = tile_capacity_ - o.footprint.tile_bytes;
    c.headroom.push_back(free);
    if (i == 0 || free < c.least_headroom) c.least_headroom = free, c.tightest_ipu = i;
  }
  Execution ex = ex_;
  const bool by_shape = std::find(weight_updates_.begin(), weight_updates_.end(),
                                  WeightUpdateSchedule::OverlapMemoryOptimized) != weight_updates_.end();
  ex.weight_update_schedule = by_shape ? WeightUpdateSchedule::OverlapMemoryOptimized : weight_updates_.front();
  const ComposedPlan composed = table_.compose(c.split, ex);
  for (WeightUpdateSchedule wu : weight_updates_) {
    ex.weight_update_schedule = wu;
    c.settings.weight_update = wu;
    c.estimate = estimate_step(ex, composed.plan, routes_);
    c.throughput = samples_ / c.estimate.step_seconds;
    c.score = objective_ == Objective::Throughput ? c.throughput : 1 / c.estimate.latency_seconds;
    ++counts_->evaluated;
    incumbents_->add(c);
  }
}

} // namespace ipusim

namespace ipusim {

namespace {

constexpr double kAllocation = 32;  // as split_costs.cpp counts a heap block's overhead

template <typename T>
double vector_bytes(const std::vector<T>& v) {
  return v.capacity() == 0 ? 0 : static_cast<double>(v.capacity() * sizeof(T)) + kAllocation;
}

} // namespace

double SplitSearch::resident_bound(int ipus, int units, std::size_t amps) {
  const double W = ipus, U = units, A = static_cast<double>(amps), S = 4 * (W + 1);
  // The object; its execution's lists (placement, names); per IPU its allowed values, stash
  // depth and chosen block, the fill and flush bounds per depth of the walk; per unit the
  // prefix of least work, the stem and heads sharing flags, the IPU of each unit.
  return static_cast<double>(sizeof(SplitSearch)) + 4096 + W * (sizeof(std::vector<int>) + A * sizeof(int) + kAllocation) +
         (W + 1) * (sizeof(int) + sizeof(std::pair<int, int>)) + (W + 2) * (sizeof(std::vector<double>) + S * sizeof(double) + kAllocation) +
         (U + 1) * sizeof(double) + 2 * U + U * sizeof(int) + 12 * kAllocation;
}

double SplitSearch::tables_bound(int ipus, int units, std::size_t amps) {
  const double W = ipus, U = units, A = static_cast<double>(amps);
  // An option list per (IPU, first unit, units taken), each of at most one entry per value;
  // a suffix per (IPU, first unit) with at most one move per (units taken, value), and the
  // moves being sorted in each frame of the recursion (one per IPU); a leaf's composed plan
  // and memory report (per IPU: its stages, copies, memory figures).
  const double cells = W * (U + 1) * (U + 1);
  return cells * (sizeof(std::vector<Option>) + 1 + kAllocation) + cells * A * sizeof(Option) +
         (W + 1) * U * (sizeof(Suffix) + (U + 1) * A * sizeof(std::pair<int, int>) + kAllocation) +
         W * (U + 1) * A * (sizeof(std::pair<double, std::pair<int, int>>) + sizeof(std::pair<int, int>)) + 2 * W * kAllocation +
         64 * 1024 + (W + 1) * 8192 + W * (U + 1) * sizeof(double) + kAllocation;  // the last: cut_seconds
}

double SplitSearch::bytes_held() const {
  double bytes = static_cast<double>(sizeof(SplitSearch));
  bytes += vector_bytes(option_cache_) + vector_bytes(option_ready_) + vector_bytes(suffixes_);
  for (const auto& options : option_cache_) bytes += vector_bytes(options);
  for (const Suffix& s : suffixes_) bytes += vector_bytes(s.moves);
  bytes += vector_bytes(allowed_amps_) + vector_bytes(stash_) + vector_bytes(chosen_) + vector_bytes(ramp_) +
           vector_bytes(cut_seconds_);
  for (const auto& a : allowed_amps_) bytes += vector_bytes(a);
  for (const auto& r : ramp_) bytes += vector_bytes(r);
  bytes += vector_bytes(unit_prefix_) + vector_bytes(shares_stem_) + vector_bytes(shares_heads_) + vector_bytes(ipu_of_unit_) +
           vector_bytes(weight_updates_);
  return bytes;
}

} // namespace ipusim
