#include "sim/search/planner.hpp"

#include <algorithm>
#include <mutex>
#include <thread>

#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

std::string Candidate::placement() const {
  std::string out = "[";
  for (std::size_t i = 0; i < layers_per_ipu.size(); ++i) out += (i ? "," : "") + std::to_string(layers_per_ipu[i]);
  out += "]";
  out += heads_on_last ? " heads on last IPU" : " heads on IPU0";
  out += recompute ? ", recomputation" : ", no recomputation";
  out += ", G=" + std::to_string(gradient_accumulation);
  return out;
}

std::vector<std::vector<int>> contiguous_splits(int layers, int ipus) {
  std::vector<std::vector<int>> out;
  std::vector<int> split;
  auto place = [&](auto&& self, int left, int ipu) -> void {
    if (ipu == ipus - 1) {
      split.push_back(left);
      out.push_back(split);
      split.pop_back();
      return;
    }
    for (int k = 1; k <= left - (ipus - 1 - ipu); ++k) {
      split.push_back(k);
      self(self, left - k, ipu + 1);
      split.pop_back();
    }
  };
  if (ipus >= 1 && layers >= ipus) place(place, layers, 0);
  return out;
}

Scenario candidate_scenario(const Scenario& scenario, const LayerStructure& layers, const Candidate& c) {
  Scenario sc = scenario;
  sc.model = place_layers(scenario.model, layers, c.layers_per_ipu, c.heads_on_last);
  sc.execution.recomputation = c.recompute ? Recomputation::Pipeline : Recomputation::None;
  if (sc.execution.training) sc.execution.gradient_accumulation = c.gradient_accumulation;
  sc.execution.schedule = "popart";
  sc.execution.modes = {Mode::Pipelined};
  return sc;
}

namespace {

bool better(const Candidate& a, const Candidate& b, Objective objective) {
  const double ka = objective == Objective::Throughput ? -a.throughput : a.estimate.latency_seconds;
  const double kb = objective == Objective::Throughput ? -b.throughput : b.estimate.latency_seconds;
  if (ka != kb) return ka < kb;
  if (a.layers_per_ipu != b.layers_per_ipu) return a.layers_per_ipu < b.layers_per_ipu;
  if (a.heads_on_last != b.heads_on_last) return !a.heads_on_last;
  if (a.recompute != b.recompute) return !a.recompute;
  return a.gradient_accumulation < b.gradient_accumulation;
}

struct SplitJob {
  std::vector<int> split;
  bool heads_on_last;
};

} // namespace

PlanSearch search_plans(const Scenario& scenario, const PlanSearchOptions& options) {
  PlanSearch out;
  out.layers = detect_layers(scenario.model);
  int ipus = options.ipus;
  if (ipus <= 0) {
    std::int64_t highest = 0;
    for (const Op& op : scenario.model.ops) highest = std::max(highest, op.virtual_graph.value_or(0));
    ipus = static_cast<int>(highest) + 1;
  }
  const int units = static_cast<int>(out.layers.names.size());
  if (ipus < 2 || ipus > units)
    throw InputError(scenario.model.file, scenario.model.ops_pointer, "plan.ipus",
                     "the planner splits " + std::to_string(units) + (out.layers.by_ops ? " ops" : " layers") +
                         " over 2 to " + std::to_string(units) + " IPUs; asked for " + std::to_string(ipus) +
                         " (--ipus)");
  const Execution& ex = scenario.execution;
  std::vector<std::int64_t> gs = options.gradient_accumulation;
  if (gs.empty() || !ex.training) gs = {ex.gradient_accumulation};
  std::vector<bool> recomputes{false};
  if (ex.training) recomputes.push_back(true);
  std::vector<SplitJob> jobs;
  for (const auto& split : contiguous_splits(units, ipus)) {
    jobs.push_back({split, true});
    if (out.layers.has_heads()) jobs.push_back({split, false});
  }

  std::mutex lock;
  std::size_t next = 0, refusal_job = jobs.size();  // the lowest refused job: the same message whatever -j
  std::vector<Candidate> fitting;
  std::exception_ptr failure;
  auto worker = [&] {
    std::vector<Candidate> mine;
    std::size_t evaluated = 0, oom = 0, shallow = 0, refused = 0;
    std::string first_refusal;
    std::size_t first_refusal_job = jobs.size();
    try {
      for (;;) {
        std::size_t j = 0;
        {
          std::lock_guard<std::mutex> guard(lock);
          if (next >= jobs.size() || failure) break;
          j = next++;
        }
        Candidate base;
        base.layers_per_ipu = jobs[j].split;
        base.heads_on_last = jobs[j].heads_on_last;
        base.gradient_accumulation = gs.front();
        Scenario sc = candidate_scenario(scenario, out.layers, base);
        Plan plan;
        try {
          plan = make_plan(sc, build_graph(sc.model));
          if (plan.pipelining_refused) throw *plan.pipelining_refused;
        } catch (const InputError& e) {
          // A placement PopART refuses (a tied weight on two IPUs, ...): not a candidate.
          ++refused;
          if (j < first_refusal_job) first_refusal_job = j, first_refusal = e.what();
          continue;
        }
        const std::vector<int> stash = popart_stash_depth(plan);
        for (bool recompute : recomputes) {
          const MemoryReport memory = estimate_memory(sc, plan, stash, recompute);
          for (std::int64_t g : gs) {
            ++evaluated;
            Candidate c = base;
            c.recompute = recompute;
            c.gradient_accumulation = g;
            c.fits = memory.fits;
            c.headroom_bytes = 0;
            bool first = true;
            for (const IpuMemory& m : memory.ipus) {
              const double free = m.tile_capacity_bytes - m.fullest_tile_bytes;
              if (first || free < c.headroom_bytes) c.headroom_bytes = free, c.tightest_ipu = m.id;
              first = false;
            }
            if (!c.fits) {
              ++oom;
              continue;
            }
            sc.execution.recomputation = recompute ? Recomputation::Pipeline : Recomputation::None;
            if (sc.execution.training) sc.execution.gradient_accumulation = g;
            const bool accumulating = sc.execution.training && g > 1;
            const std::int64_t depth = accumulating ? g : sc.execution.batches_per_step;
            if (depth < plan.stage_count()) {
              ++shallow;
              continue;
            }
            c.estimate = estimate_popart_step(sc, plan);
            const std::int64_t micro_batches = depth * (accumulating ? sc.execution.batches_per_step : 1);
            c.throughput = static_cast<double>(micro_batches * sc.execution.micro_batch_size * sc.execution.replicas) /
                           c.estimate.step_seconds;
            mine.push_back(std::move(c));
          }
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> guard(lock);
      if (!failure) failure = std::current_exception();
    }
    std::lock_guard<std::mutex> guard(lock);
    out.evaluated += evaluated;
    out.out_of_memory += oom;
    out.too_shallow += shallow;
    out.refused += refused;
    if (first_refusal_job < refusal_job) refusal_job = first_refusal_job, out.first_refusal = first_refusal;
    for (auto& c : mine) fitting.push_back(std::move(c));
  };
  const int threads = std::max(1, std::min<int>(options.jobs, static_cast<int>(jobs.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  std::sort(fitting.begin(), fitting.end(),
            [&](const Candidate& a, const Candidate& b) { return better(a, b, options.objective); });
  out.ranked = std::move(fitting);
  return out;
}

} // namespace ipusim
