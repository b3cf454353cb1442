#include "sim/search/planner.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/split_costs.hpp"

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

enum class Verdict { Fits, OutOfMemory, TooShallow };

// A candidate's figures from its plan (built or composed) and memory; `sc` has its
// recomputation and G set.
Verdict judge(const Scenario& sc, const Plan& plan, const MemoryReport& memory, Candidate& c) {
  c.fits = memory.fits;
  c.headroom_bytes = 0;
  bool first = true;
  for (const IpuMemory& m : memory.ipus) {
    const double free = m.tile_capacity_bytes - m.fullest_tile_bytes;
    if (first || free < c.headroom_bytes) c.headroom_bytes = free, c.tightest_ipu = m.id;
    first = false;
  }
  if (!c.fits) return Verdict::OutOfMemory;
  const Execution& ex = sc.execution;
  const bool accumulating = ex.training && ex.gradient_accumulation > 1;
  const std::int64_t depth = accumulating ? ex.gradient_accumulation : ex.batches_per_step;
  if (depth < plan.stage_count()) return Verdict::TooShallow;
  c.estimate = estimate_popart_step(sc, plan);
  const std::int64_t micro_batches = depth * (accumulating ? ex.batches_per_step : 1);
  c.throughput = static_cast<double>(micro_batches * ex.micro_batch_size * ex.replicas) / c.estimate.step_seconds;
  return Verdict::Fits;
}

// The candidate's scenario with its recomputation and G.
Scenario with_settings(Scenario sc, bool recompute, std::int64_t g) {
  sc.execution.recomputation = recompute ? Recomputation::Pipeline : Recomputation::None;
  if (sc.execution.training) sc.execution.gradient_accumulation = g;
  return sc;
}

// The search's inputs and what it has counted so far.
struct Search {
  const Scenario& scenario;
  const LayerStructure& layers;
  std::vector<SplitJob> jobs;
  std::vector<bool> recomputes;
  std::vector<std::int64_t> gs;
  PlanSearch& out;
  std::size_t refusal_job = 0;  // the lowest refused job: the same message whatever -j

  Scenario job_scenario(const SplitJob& job) const {
    Candidate base;
    base.layers_per_ipu = job.split;
    base.heads_on_last = job.heads_on_last;
    base.gradient_accumulation = gs.front();
    return candidate_scenario(scenario, layers, base);
  }
  // The plan `run` builds for the job; throws InputError when PopART refuses the placement.
  Plan full_plan(const Scenario& sc) const {
    Plan plan = make_plan(sc, build_graph(sc.model));
    if (plan.pipelining_refused) throw *plan.pipelining_refused;
    return plan;
  }
};

// Every candidate built as `run` builds it: graph, plan, memory (~45 ms for BERT-Large), on
// `jobs` threads. For models whose layers the split tables cannot compose.
std::vector<Candidate> search_with_full_plans(Search& search, int jobs) {
  std::mutex lock;
  std::size_t next = 0;
  search.refusal_job = search.jobs.size();
  std::vector<Candidate> fitting;
  std::exception_ptr failure;
  auto worker = [&] {
    std::vector<Candidate> mine;
    std::size_t evaluated = 0, oom = 0, shallow = 0, refused = 0;
    std::string first_refusal;
    std::size_t first_refusal_job = search.jobs.size();
    try {
      for (;;) {
        std::size_t j = 0;
        {
          std::lock_guard<std::mutex> guard(lock);
          if (next >= search.jobs.size() || failure) break;
          j = next++;
        }
        const Scenario sc = search.job_scenario(search.jobs[j]);
        Plan plan;
        try {
          plan = search.full_plan(sc);
        } catch (const InputError& e) {
          // A placement PopART refuses (a tied weight on two IPUs, ...): not a candidate.
          ++refused;
          if (j < first_refusal_job) first_refusal_job = j, first_refusal = e.what();
          continue;
        }
        const std::vector<int> stash = popart_stash_depth(plan);
        for (bool recompute : search.recomputes) {
          const MemoryReport memory = estimate_memory(sc, plan, stash, recompute);
          for (std::int64_t g : search.gs) {
            ++evaluated;
            Candidate c;
            c.layers_per_ipu = search.jobs[j].split;
            c.heads_on_last = search.jobs[j].heads_on_last;
            c.recompute = recompute;
            c.gradient_accumulation = g;
            const Verdict v = judge(with_settings(sc, recompute, g), plan, memory, c);
            if (v == Verdict::OutOfMemory) ++oom;
            if (v == Verdict::TooShallow) ++shallow;
            if (v == Verdict::Fits) mine.push_back(std::move(c));
          }
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> guard(lock);
      if (!failure) failure = std::current_exception();
    }
    std::lock_guard<std::mutex> guard(lock);
    search.out.evaluated += evaluated;
    search.out.out_of_memory += oom;
    search.out.too_shallow += shallow;
    search.out.refused += refused;
    if (first_refusal_job < search.refusal_job) search.refusal_job = first_refusal_job, search.out.first_refusal = first_refusal;
    for (auto& c : mine) fitting.push_back(std::move(c));
  };
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(search.jobs.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return fitting;
}

// Every candidate composed from the split tables (sim/search/split_costs.hpp): microseconds
// each. Returns nothing and counts nothing when the tables do not apply.
std::optional<std::vector<Candidate>> search_with_split_costs(Search& search) {
  const Scenario base = search.job_scenario(search.jobs.front());
  const int ipus = static_cast<int>(search.jobs.front().split.size());
  const SplitCosts table(base, search.layers, ipus);
  if (!table.usable()) return std::nullopt;
  std::size_t reference = 0;  // the first job PopART accepts: options it refuses whatever the split show here
  while (reference < search.jobs.size() &&
         table.refused(search.jobs[reference].split, search.jobs[reference].heads_on_last))
    ++reference;
  if (reference < search.jobs.size()) {
    try {
      search.full_plan(search.job_scenario(search.jobs[reference]));
    } catch (const InputError&) {
      return std::nullopt;
    }
  }
  std::map<std::pair<bool, std::int64_t>, Scenario> settings;
  for (bool recompute : search.recomputes)
    for (std::int64_t g : search.gs) settings.emplace(std::pair{recompute, g}, with_settings(base, recompute, g));
  std::vector<Candidate> fitting;
  PlanSearch& out = search.out;
  search.refusal_job = search.jobs.size();
  for (std::size_t j = 0; j < search.jobs.size(); ++j) {
    const SplitJob& job = search.jobs[j];
    if (table.refused(job.split, job.heads_on_last)) {
      ++out.refused;
      search.refusal_job = std::min(search.refusal_job, j);
      continue;
    }
    const ComposedPlan composed = table.compose(job.split, job.heads_on_last);
    for (bool recompute : search.recomputes) {
      const MemoryReport memory = table.memory(composed, recompute);
      for (std::int64_t g : search.gs) {
        ++out.evaluated;
        Candidate c;
        c.layers_per_ipu = job.split;
        c.heads_on_last = job.heads_on_last;
        c.recompute = recompute;
        c.gradient_accumulation = g;
        const Verdict v = judge(settings.at({recompute, g}), composed.plan, memory, c);
        if (v == Verdict::OutOfMemory) ++out.out_of_memory;
        if (v == Verdict::TooShallow) ++out.too_shallow;
        if (v == Verdict::Fits) fitting.push_back(std::move(c));
      }
    }
  }
  if (search.refusal_job < search.jobs.size()) {
    try {
      search.full_plan(search.job_scenario(search.jobs[search.refusal_job]));
    } catch (const InputError& e) {
      out.first_refusal = e.what();
    }
  }
  return fitting;
}

// The leading candidates' figures from the plan `run` builds, replacing the composed ones
// (equal to rounding); one that no longer fits drops out.
void recheck_with_full_plans(Search& search, std::size_t count, Objective objective) {
  std::vector<Candidate>& ranked = search.out.ranked;
  std::size_t i = 0;
  while (i < ranked.size() && i < count) {
    Candidate& c = ranked[i];
    const Scenario sc = search.job_scenario({c.layers_per_ipu, c.heads_on_last});
    const Plan plan = search.full_plan(sc);
    const MemoryReport memory = estimate_memory(sc, plan, popart_stash_depth(plan), c.recompute);
    const Verdict v = judge(with_settings(sc, c.recompute, c.gradient_accumulation), plan, memory, c);
    if (v == Verdict::Fits) {
      ++i;
      continue;
    }
    ++(v == Verdict::OutOfMemory ? search.out.out_of_memory : search.out.too_shallow);
    ranked.erase(ranked.begin() + static_cast<std::ptrdiff_t>(i));
  }
  std::sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(i),
            [&](const Candidate& a, const Candidate& b) { return better(a, b, objective); });
}

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
  Search search{scenario, out.layers, {}, {false}, options.gradient_accumulation, out};
  if (search.gs.empty() || !ex.training) search.gs = {ex.gradient_accumulation};
  if (ex.training) search.recomputes.push_back(true);
  for (const auto& split : contiguous_splits(units, ipus)) {
    search.jobs.push_back({split, true});
    if (out.layers.has_heads()) search.jobs.push_back({split, false});
  }
  std::vector<Candidate> fitting;
  if (options.full_plans_only) {
    fitting = search_with_full_plans(search, options.jobs);
  } else if (auto composed = search_with_split_costs(search)) {
    fitting = std::move(*composed);
  } else {
    fitting = search_with_full_plans(search, options.jobs);
  }
  std::sort(fitting.begin(), fitting.end(),
            [&](const Candidate& a, const Candidate& b) { return better(a, b, options.objective); });
  out.ranked = std::move(fitting);
  recheck_with_full_plans(search, static_cast<std::size_t>(std::max(options.recheck, 0)), options.objective);
  return out;
}

} // namespace ipusim
