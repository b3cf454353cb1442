#include "sim/search/planner.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <functional>
#include <sstream>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/incumbents.hpp"
#include "sim/search/split_search.hpp"

namespace ipusim {

namespace {

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

} // namespace

std::string Candidate::placement() const {
  std::string out = "[";
  for (std::size_t i = 0; i < split.layers_per_ipu.size(); ++i)
    out += (i ? "," : "") + layer_count_text(split.layers_per_ipu[i], split.units_per_layer);
  // As describe_placement names a model's own placement.
  const auto last = split.layers_per_ipu.empty() ? 0 : split.layers_per_ipu.size() - 1;
  return out + "] heads on IPU" + (split.heads_on_last ? std::to_string(last) : "0");
}

namespace {

// "8 IPUs x 2 replicas", or with tensor parallelism "8 groups of 4 IPUs (tp 4) x 2 replicas".
std::string shape_text(const PlanSettings& s) {
  return std::to_string(s.ipus) +
         (s.tensor_parallel > 1 ? " groups of " + std::to_string(s.tensor_parallel) + " IPUs (tp " +
                                      std::to_string(s.tensor_parallel) + ")"
                                : std::string(" IPUs")) +
         " x " + std::to_string(s.replicas) + " replica" + (s.replicas == 1 ? "" : "s");
}

} // namespace

std::string describe_settings(const PlanSettings& s, bool training) {
  std::string out = shape_text(s) + ", " + s.schedule + ", micro-batch " + std::to_string(s.micro_batch) +
                    (training ? ", G " : ", batchesPerStep ") + std::to_string(s.depth);
  if (training) {
    out += s.recompute ? ", recomputation" : ", no recomputation";
    out += s.state_off_chip ? ", state off chip" : ", state on chip";
    if (s.replicas > 1) out += s.rts ? ", RTS" : ", no RTS";
  }
  return out + ", heads on " + (s.heads_on_last ? "last IPU" : "IPU0");
}

std::string Candidate::describe(bool training) const {
  const PlanSettings& s = settings;
  std::string out = shape_text(s) + ", " + placement() + ", " + s.schedule + ", micro-batch " +
                    std::to_string(s.micro_batch) + (training ? ", G " : ", batchesPerStep ") + std::to_string(s.depth);
  if (training) {
    out += s.recompute ? ", recomputation" : ", no recomputation";
    out += s.state_off_chip ? ", state off chip" : ", state on chip";
    if (s.replicas > 1) out += s.rts ? ", RTS" : ", no RTS";
    if (schedule_info(s.schedule).follows_weight_update_setting)
      out += ", " + weight_update_schedule_name(s.weight_update);
  }
  bool uniform = std::all_of(amp.begin(), amp.end(), [&](double a) { return a == amp.front(); });
  out += ", AMP ";
  if (uniform && !amp.empty()) out += number(amp.front());
  else {
    out += "[";
    for (std::size_t i = 0; i < amp.size(); ++i) out += (i ? "," : "") + number(amp[i]);
    out += "]";
  }
  return out;
}

std::vector<std::vector<int>> contiguous_splits(int layers, int ipus, bool first_may_be_empty, bool last_may_be_empty) {
  std::vector<std::vector<int>> out;
  std::vector<int> split;
  auto place = [&](auto&& self, int left, int ipu) -> void {
    if (ipu == ipus - 1) {
      if (left >= (last_may_be_empty ? 0 : 1)) {
        split.push_back(left);
        out.push_back(split);
        split.pop_back();
      }
      return;
    }
    const int least = ipu == 0 && first_may_be_empty ? 0 : 1;
    for (int k = least; k <= left; ++k) {
      split.push_back(k);
      self(self, left - k, ipu + 1);
      split.pop_back();
    }
  };
  if (ipus >= 1) place(place, layers, 0);
  return out;
}

bool schedule_accepts(const std::string& schedule, int P, bool ipu_holds_two_stages, std::int64_t depth, bool training) {
  const ScheduleInfo* s = find_schedule(schedule);
  return s != nullptr && s->accepts != nullptr && s->accepts(P, ipu_holds_two_stages, depth, training);
}

Execution settings_execution(const Execution& base, const PlanSettings& s, const std::vector<double>& amp) {
  Execution ex = base;
  ex.schedule = s.schedule;
  ex.modes = {Mode::Pipelined};
  ex.replicas = s.replicas;
  ex.placement.clear();
  ex.micro_batch_size = s.micro_batch;
  if (ex.training) ex.gradient_accumulation = s.depth;
  else ex.batches_per_step = s.depth;
  ex.recomputation = s.recompute ? Recomputation::Pipeline : Recomputation::None;
  ex.optimizer_state_off_chip = s.state_off_chip;
  ex.replicated_tensor_sharding = s.rts;
  ex.weight_update_schedule = s.weight_update;
  auto& excluded = ex.weight_update_excluded_ipus;
  excluded.erase(std::remove_if(excluded.begin(), excluded.end(), [&](std::int64_t v) { return v >= s.ipus; }),
                 excluded.end());
  if (!amp.empty()) {
    const bool uniform = std::all_of(amp.begin(), amp.end(), [&](double a) { return a == amp.front(); });
    ex.available_memory_proportion = uniform ? std::vector<double>{amp.front()} : amp;
  }
  return ex;
}

Scenario candidate_scenario(const Scenario& scenario, const LayerStructure& layers, const Candidate& c) {
  Scenario sc = scenario;
  sc.model = place_layers(scenario.model, layers, c.split.layers_per_ipu, c.split.heads_on_last);
  sc.execution = settings_execution(scenario.execution, c.settings, c.amp);
  return sc;
}

namespace {

// The candidate's figures from the plan `run` builds (equal to the composed ones to rounding);
// false when it no longer fits.
bool recheck(const Scenario& scenario, const LayerStructure& layers, Candidate& c, Objective objective) {
  const Scenario sc = candidate_scenario(scenario, layers, c);
  const Plan plan = make_plan(sc, build_graph(sc.model));
  const Execution& ex = sc.execution;
  const MemoryReport memory =
      estimate_memory(sc, plan, stash_depths(ex.schedule, plan.forward_stage_count, c.settings.depth, ex.training),
                      ex.recomputation == Recomputation::Pipeline);
  if (!memory.fits) return false;
  const double samples = c.throughput * c.estimate.step_seconds;
  c.estimate = estimate_step(sc, plan);
  c.throughput = samples / c.estimate.step_seconds;
  c.score = objective == Objective::Throughput ? c.throughput : 1 / c.estimate.latency_seconds;
  for (const IpuMemory& m : memory.ipus) {
    const double free = m.tile_capacity_bytes - m.fullest_tile_bytes;
    c.headroom[static_cast<std::size_t>(m.id)] = free;
    if (m.id == 0 || free < c.least_headroom) c.least_headroom = free, c.tightest_ipu = m.id;
  }
  return true;
}

// The search takes each IPU's fastest fitting availableMemoryProportion. Where a lower one
// (less memory for matmul temporaries, more headroom) leaves the step time within the
// tolerance, as on an IPU that paces nothing, the candidate takes it.
// Returns false when `out_of_time` stopped it (each trial times a whole step: at a large G
// under GPipe or 1F1B that is a walk over every micro-batch).
bool polish_headroom(Candidate& c, const Scenario& sc, const PlanSpace& space, const SplitCosts& table,
                     RouteTable& routes, Objective objective, double tolerance, const std::function<bool()>& out_of_time) {
  if (!space.fixed_amps.empty()) return true;
  const Execution ex = settings_execution(sc.execution, c.settings, {});
  const int W = c.settings.ipus;
  const int P = W + (c.settings.heads_on_last ? 0 : 1);
  const std::vector<int> stash = stash_depths(c.settings.schedule, P, c.settings.depth, ex.training);
  const auto stages = table.stage_blocks(c.split);
  MemorySettings m;
  m.recompute = c.settings.recompute;
  m.state_on_chip = !c.settings.state_off_chip;
  m.shards = c.settings.rts && c.settings.replicas > 1 ? c.settings.replicas : 1;
  const double capacity = static_cast<double>(sc.hardware.ipu.sram_bytes_per_tile);
  const double limit = c.estimate.step_seconds * (1 + tolerance);
  const double samples = c.throughput * c.estimate.step_seconds;
  for (int ipu = 0; ipu < W; ++ipu) {
    const auto i = static_cast<std::size_t>(ipu);
    for (int a = 0; a < c.split.amp[i]; ++a) {
      m.amp = a;
      const IpuFootprint f = table.footprint(table.ipu_blocks(stages, ipu, W, stash), m);
      if (f.tile_bytes > capacity || f.total_bytes > capacity * static_cast<double>(sc.hardware.ipu.tiles)) continue;
      if (out_of_time()) return false;
      Split trial = c.split;
      trial.amp[i] = a;
      const StepEstimate e = estimate_step(ex, table.compose(trial, ex).plan, routes);
      if (e.step_seconds > limit) continue;
      c.split = trial;
      c.amp[i] = table.amps()[static_cast<std::size_t>(a)];
      c.estimate = e;
      c.throughput = samples / e.step_seconds;
      c.score = objective == Objective::Throughput ? c.throughput : 1 / e.latency_seconds;
      c.headroom[i] = capacity - f.tile_bytes;
      break;
    }
  }
  c.least_headroom = *std::min_element(c.headroom.begin(), c.headroom.end());
  c.tightest_ipu = static_cast<int>(std::min_element(c.headroom.begin(), c.headroom.end()) - c.headroom.begin());
  return true;
}

// Each point of the outer dimensions its schedule's rules accept, with whether G > 1 (its
// table); the others are counted as ruled out.
void for_each_point(const Scenario& scenario, const PlanSpace& space, bool has_heads, SearchCounts& counts,
                    const std::function<void(const PlanSettings&, bool)>& visit) {
  const Execution& base = scenario.execution;
  const bool training = base.training;
  for (const PipelineShape& shape : space.shapes)
    for (std::int64_t mb : space.micro_batches)
      for (std::int64_t depth : space.depths_for(mb, shape.replicas))
        for (const std::string& schedule : space.schedules)
          for (bool recompute : space.recomputation)
            for (bool off_chip : space.state_off_chip)
              for (bool rts : space.rts)
                for (bool heads_on_last : space.heads_on_last) {
                  ++counts.settings;
                  const int P = shape.ipus + (heads_on_last ? 0 : 1);
                  const bool accumulating = training && depth > 1;
                  const std::int64_t schedule_depth =
                      schedule_info(schedule).lockstep_cycles && training && !accumulating ? base.batches_per_step
                                                                                           : depth;
                  if ((!heads_on_last && !has_heads) || (rts && shape.replicas == 1) ||
                      !schedule_accepts(schedule, P, !heads_on_last, schedule_depth, training)) {
                    ++counts.settings_ruled_out;
                    continue;
                  }
                  PlanSettings st;
                  st.ipus = shape.ipus, st.replicas = shape.replicas, st.micro_batch = mb, st.depth = depth;
                  st.schedule = schedule, st.recompute = recompute, st.state_off_chip = off_chip, st.rts = rts;
                  st.heads_on_last = heads_on_last, st.weight_update = base.weight_update_schedule;
                  st.tensor_parallel = static_cast<int>(base.tensor_parallel);
                  visit(st, accumulating);
                }
}

bool model_has_heads(const LayerStructure& layers) {
  const int units = static_cast<int>(layers.names.size()) + 2;
  bool has_heads = false;
  for (int u : layers.unit_of_op) has_heads = has_heads || u + 2 == units;
  return has_heads;
}

} // namespace

LayerStructure plan_units(const Model& model, const PlanSpace& space) {
  LayerStructure layers = detect_layers(model);
  if (space.half_layers)
    if (auto halves = halve_layers(model, layers)) return std::move(*halves);
  return layers;
}

namespace {

// The planner's cost tables, one per micro-batch (and whether G > 1), built when first needed.
class SplitCostTables {
public:
  SplitCostTables(const Scenario& scenario, const LayerStructure& layers, const PlanSpace& space)
      : scenario_(scenario), layers_(layers), space_(space) {}

  const SplitCosts& at(std::int64_t micro_batch, bool accumulating) {
    auto& table = tables_[{micro_batch, accumulating}];
    if (!table) {
      table = std::make_unique<SplitCosts>(scenario_, layers_, micro_batch, accumulating, space_.amps);
      if (!table->usable())
        throw InputError(scenario_.model.file, scenario_.model.ops_pointer, "plan.layers",
                         "the planner's layers (" + (layers_.pattern.empty() ? std::string("ops") : layers_.pattern) +
                             ") do not follow the data flow: " + table->why_not_usable() +
                             " (see plan --explain-layers)");
    }
    return *table;
  }

private:
  const Scenario& scenario_;
  const LayerStructure& layers_;
  const PlanSpace& space_;
  std::map<std::pair<std::int64_t, bool>, std::unique_ptr<SplitCosts>> tables_;
};

// The settings of a search explored best bound first (each point's bound refined by its
// dynamic program when it comes up: good candidates early prune the rest), with the search's
// progress reports and time limit.
class BestFirstSearch {
public:
  using Clock = std::chrono::steady_clock;

  // `start`: when the search began (its tables and points count towards its time).
  BestFirstSearch(Clock::time_point start, std::vector<std::unique_ptr<SplitSearch>> points, Incumbents& incumbents,
                  PlanSearch& out, const PlanSearchOptions& options, bool training)
      : start_(start), points_(std::move(points)), incumbents_(incumbents), out_(out), options_(options),
        training_(training) {}

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  bool out_of_time() const { return options_.time_limit_s > 0 && elapsed() > options_.time_limit_s; }

  void run() {
    for (std::size_t i = 0; i < points_.size(); ++i) queue_.push({points_[i]->bound(), i});
    while (!queue_.empty()) {
      const Entry e = queue_.top();
      queue_.pop();
      if (explore(e)) finish(e.index);
    }
    if (out_.counts.settings > 0) report(true);
  }

private:
  struct Entry {
    double bound;
    std::size_t index;
    bool operator<(const Entry& o) const { return bound != o.bound ? bound < o.bound : index > o.index; }
  };

  // Whether the point is done with (else it went back in the queue with its refined bound).
  bool explore(const Entry& e) {
    SplitSearch& point = *points_[e.index];
    if (stopped_ || stop()) {
      out_.complete = false;
      out_.unexplored_bound = std::max(out_.unexplored_bound, e.bound);
      return true;
    }
    auto pruned = [&](double bound) {
      if (!options_.prune || incumbents_.worth(bound, point.headroom_bound(), point.global_batch())) return false;
      ++out_.counts.settings_pruned;
      return true;
    };
    if (pruned(e.bound)) return true;
    if (!point.refined()) {
      point.refine(out_.counts);
      if (point.bound() <= 0) {
        ++out_.counts.settings_infeasible;
        return true;
      }
      if (!queue_.empty() && point.bound() < queue_.top().bound) {
        point.release();
        queue_.push({point.bound(), e.index});
        return false;
      }
      if (pruned(point.bound())) return true;
    }
    current_ = &point.settings();
    const bool finished = point.run(incumbents_, out_.counts, [this] { return stop(); });
    current_ = nullptr;
    if (!finished) {
      out_.complete = false;
      out_.unexplored_bound = std::max(out_.unexplored_bound, point.bound());
    }
    return true;
  }

  void finish(std::size_t index) {
    points_[index].reset();
    ++done_;
    report(false);
  }

  bool stop() {
    report(false);
    stopped_ = stopped_ || out_of_time();
    return stopped_;
  }

  void report(bool force) {
    if (!options_.progress) return;
    const double now = elapsed();
    if (!force && (now < 1.0 || now - last_report_ < 1.0)) return;
    last_report_ = now;
    SearchProgress p;
    p.elapsed_s = now;
    p.settings_done = done_;
    p.settings_total = points_.size();
    p.evaluated = out_.counts.evaluated;
    p.best = incumbents_.best();
    if (current_) p.current = describe_settings(*current_, training_);
    p.eta_s = done_ > 0 ? now / static_cast<double>(done_) * static_cast<double>(points_.size() - done_) : 0;
    options_.progress(p);
  }

  const Clock::time_point start_;
  std::vector<std::unique_ptr<SplitSearch>> points_;
  Incumbents& incumbents_;
  PlanSearch& out_;
  const PlanSearchOptions& options_;
  const bool training_;
  std::priority_queue<Entry> queue_;
  std::size_t done_ = 0;
  double last_report_ = 0;
  const PlanSettings* current_ = nullptr;
  bool stopped_ = false;
};

// The candidates that no other beats on both the score and the least headroom.
std::vector<Candidate> undominated(const std::vector<Candidate>& candidates) {
  std::vector<Candidate> kept;
  for (const Candidate& c : candidates) {
    bool dominated = false;
    for (const Candidate& d : candidates)
      dominated = dominated || (&d != &c && d.score >= c.score && d.least_headroom >= c.least_headroom &&
                                (d.score > c.score || d.least_headroom > c.least_headroom));
    if (!dominated) kept.push_back(c);
  }
  return kept;
}

// The search over the units `layers`.
PlanSearch search_units(const Scenario& scenario, const PlanSpace& space, LayerStructure layers,
                        const PlanSearchOptions& options) {
  const auto start = BestFirstSearch::Clock::now();
  PlanSearch out;
  out.layers = std::move(layers);
  out.space = space;
  const Execution& base = scenario.execution;
  const bool training = base.training;
  SplitCostTables tables(scenario, out.layers, space);
  RouteTable routes(scenario.hardware);
  routes.note_link_sharing = false;  // the answers are re-estimated (recheck) before they are reported
  std::vector<std::unique_ptr<SplitSearch>> points;
  for_each_point(scenario, space, model_has_heads(out.layers), out.counts,
                 [&](const PlanSettings& st, bool accumulating) {
                   points.push_back(std::make_unique<SplitSearch>(scenario, space, tables.at(st.micro_batch, accumulating),
                                                                  st, options.objective, options.prune, routes));
                 });
  Incumbents incumbents(std::max(options.top, 1), options.front_within, space.batch_free(),
                        options.prune ? options.tolerance : 0.0);
  for (const Candidate& c : options.seeds) incumbents.seed(c);
  BestFirstSearch search(start, std::move(points), incumbents, out, options, training);
  search.run();

  out.ranked = incumbents.ranked();
  out.front = incumbents.front();
  out.batch_front = incumbents.batch_front();
  const double tolerance = options.prune ? options.tolerance : 0.0;
  // Seeds of another group size were polished and rechecked by their own search (its model).
  const auto own = [&](const Candidate& c) { return c.settings.tensor_parallel == base.tensor_parallel; };
  for (auto* list : {&out.ranked, &out.front, &out.batch_front})
    for (Candidate& c : *list)
      if (out.polished && own(c))
        out.polished = polish_headroom(c, scenario, space, tables.at(c.settings.micro_batch, training && c.settings.depth > 1),
                                       routes, options.objective, tolerance, [&] { return search.out_of_time(); });
  out.front = undominated(out.front);  // without what the polish made dominated
  // The leading candidates from the plan `run` builds, as a check of the tables.
  out.ranked.erase(std::remove_if(out.ranked.begin(), out.ranked.end(),
                                  [&](Candidate& c) { return own(c) && !recheck(scenario, out.layers, c, options.objective); }),
                   out.ranked.end());
  out.seconds = search.elapsed();
  return out;
}

// A whole-layer candidate in half-layer units.
Candidate in_halves(Candidate c) {
  for (int& k : c.split.layers_per_ipu) k *= 2;
  c.split.units_per_layer = 2;
  return c;
}

} // namespace

// Over half layers the space holds every whole-layer split (an even count of halves per IPU),
// but its bounds prune little until good candidates are known: the whole layers are searched
// first (seconds on a POD64) and their answer seeds the finer search.
PlanSearch search_plans(const Scenario& scenario, const PlanSpace& space, const PlanSearchOptions& options) {
  LayerStructure layers = plan_units(scenario.model, space);
  if (layers.units_per_layer == 1) return search_units(scenario, space, std::move(layers), options);
  PlanSpace whole_space = space;
  whole_space.half_layers = false;
  PlanSearch whole = search_units(scenario, whole_space, detect_layers(scenario.model), options);
  if (options.time_limit_s > 0 && whole.seconds >= options.time_limit_s) {
    whole.complete = false;
    whole.halves_skipped = true;
    whole.whole_layer_seconds = whole.seconds;
    return whole;
  }
  PlanSearchOptions finer = options;
  for (const auto* list : {&whole.ranked, &whole.front, &whole.batch_front})
    for (const Candidate& c : *list)
      finer.seeds.push_back(c.settings.tensor_parallel == scenario.execution.tensor_parallel ? in_halves(c) : c);
  if (finer.time_limit_s > 0) finer.time_limit_s = std::max(1e-3, finer.time_limit_s - whole.seconds);
  PlanSearch out = search_units(scenario, space, std::move(layers), finer);
  out.whole_layer_seconds = whole.seconds;
  out.seconds += whole.seconds;
  out.complete = out.complete && whole.complete;
  out.polished = out.polished && whole.polished;
  out.unexplored_bound = std::max(out.unexplored_bound, whole.unexplored_bound);
  return out;
}

PlanSearchEstimate estimate_plan_search(const Scenario& scenario, const PlanSpace& space, const LayerStructure& layers,
                                        int top) {
  PlanSearchEstimate e;
  const int units = static_cast<int>(layers.names.size()) + 2;
  int widest = 2;
  for (const PipelineShape& shape : space.shapes) widest = std::max(widest, shape.ipus + 1);  // heads on IPU 0: one more stage
  SearchCounts counts;
  std::set<std::pair<std::int64_t, bool>> tables;
  for_each_point(scenario, space, model_has_heads(layers), counts, [&](const PlanSettings& st, bool accumulating) {
    ++e.points;
    tables.emplace(st.micro_batch, accumulating);
  });
  e.tables = tables.size();
  e.table_bytes = SplitCosts::memory_bound(scenario.model, layers, space.amps.size());
  e.bytes = static_cast<double>(e.tables) * e.table_bytes;
  e.bytes += static_cast<double>(e.points) * (SplitSearch::resident_bound(widest, units, space.amps.size()) + 64);
  e.bytes += SplitSearch::tables_bound(widest, units, space.amps.size());
  // The candidates kept: the top K, the front (points of distinct headroom, a kilobyte per tile
  // apart at least), the best per global batch (one per point at most); each with its
  // settings, split and per-IPU figures, in vectors that may double.
  const double tile_kib = static_cast<double>(scenario.hardware.ipu.sram_bytes_per_tile) / 1024;
  const double candidate = static_cast<double>(sizeof(Candidate)) + 8.0 * 4 * widest + 8 * 32;
  e.bytes += 2 * (top + tile_kib + static_cast<double>(e.points)) * candidate * 2;
  // The route table, its transfers cached by IPU pair.
  e.bytes += static_cast<double>(widest) * widest * 256 + static_cast<double>(scenario.hardware.links.size()) * 1024;
  return e;
}

} // namespace ipusim
