#include "sim/output/table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>
#include <sstream>

#include "sim/output/explanation.hpp"
#include "sim/output/model_figures.hpp"
#include "sim/base/units.hpp"

namespace ipusim {

namespace {

// Past this many IPUs (or link directions) the table summarises them; the JSON keeps all.
constexpr std::size_t kDetailIpus = 16;
constexpr std::size_t kOutOfMemoryDetail = 3;  // out-of-memory verdicts written out in full
constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

void plan_section(std::ostringstream& out, const Scenario& sc, const Plan& plan, bool placed) {
  out << "Plan: " << plan.forward_stage_count << (plan.phased ? " forward phase(s)" : " forward stage(s)");
  if (plan.training) out << ", " << plan.stage_count() << " stages with backward";
  out << " on " << plan.ipus.size() << (placed ? " virtual IPU(s) per replica" : " IPU(s)");
  if (sc.execution.tensor_parallel > 1)
    out << ", each a tensor-parallel group of " << sc.execution.tensor_parallel
        << " IPUs running the shard below (vIPU v of replica r: the group's IPUs, named by range)";
  out << "\n";
  out << "  " << pad("stage", 7) << pad(placed ? "vIPU" : "IPU", 5) << pad("pass", 18) << pad("time/micro-batch", 18) << "ops\n";
  // Past kDetailIpus stages, the first and last few (the JSON document has every one).
  const std::size_t shown = kDetailIpus / 2;
  const auto elided = [&](std::size_t i, std::size_t n, const char* what) {
    if (n <= kDetailIpus || i < shown || i >= n - shown) return false;
    if (i == shown) out << "  ... " << n - 2 * shown << " more " << what << " (ipusim run --json lists every one)\n";
    return true;
  };
  for (const PlanStage& s : plan.stages) {
    if (elided(static_cast<std::size_t>(&s - plan.stages.data()), plan.stages.size(), "stages")) continue;
    const std::string pass = s.backward ? "backward" : (s.backward_seconds > 0 ? "forward+backward" : "forward");
    std::string ops;
    for (std::size_t i = 0; i < s.ops.size() && i < 4; ++i) ops += (i ? ", " : "") + sc.model.ops[s.ops[i]].name;
    if (s.ops.size() > 4) ops += ", ... (" + std::to_string(s.ops.size()) + " ops)";
    out << "  " << pad(std::to_string(s.id), 7) << pad(std::to_string(s.ipu), 5) << pad(pass, 18)
        << pad(format_seconds(s.seconds()), 18) << ops << "\n";
  }
  for (const PlanCopy& c : plan.copies) {
    if (elided(static_cast<std::size_t>(&c - plan.copies.data()), plan.copies.size(), "copies")) continue;
    out << "  copy stage " << c.from_stage << " -> " << c.to_stage << " (" << virtual_ipu_name(c.src_ipu, placed)
        << " -> " << virtual_ipu_name(c.dst_ipu, placed) << "): " << format_bytes(c.bytes) << " per micro-batch" << (c.gradient ? ", gradients" : "")
        << "\n";
  }
  if (const auto& refused = plan.pipelining_refused; refused && !plan.phased)
    out << "  pipelined runs refuse this model: " << refused->message() << " [" << refused->rule() << "]\n";
}

// "Scenario ...", its execution settings and "Model: ...": the lines above the plan.
void scenario_header(std::ostringstream& out, const Scenario& sc, const ModelFigures& model) {
  const Execution& ex = sc.execution;
  out << "Scenario " << sc.name << ": model " << sc.model.name << " on " << sc.hardware.name << "\n";
  out << (ex.training ? "Training" : "Inference") << ", micro-batch " << ex.micro_batch_size;
  if (ex.training) out << ", gradient accumulation G=" << ex.gradient_accumulation;
  if (ex.replicas > 1) out << ", " << ex.replicas << " replicas";
  out << ", batchesPerStep " << ex.batches_per_step << ", cost model " << ex.cost_model;
  if (ex.training)
    out << ", optimizer " << optimizer_name(ex.optimizer) << ", recomputation "
        << (ex.recomputation == Recomputation::Pipeline ? "pipeline" : "none");
  out
      << (ex.host_io ? "" : ", synthetic data (no host I/O)") << "\n";
  out << "Model: " << format_count(model.parameters) << " parameters, "
      << format_count(model.model_flops_per_sample) << " model FLOPs per sample"
      << (ex.training ? " (forward and backward)" : "");
  if (model.tokens_per_sample) out << ", " << *model.tokens_per_sample << " tokens per sample";
  out << "\n\n";
}

// A stage run a second time on another IPU (DualPipe) has a longer stash label.
bool has_second_copies(const Simulation& sim) {
  return std::any_of(sim.runs.begin(), sim.runs.end(), [&](const ModeRun& run) {
    return std::any_of(run.metrics.memory.stashes.begin(), run.metrics.memory.stashes.end(),
                       [&](const StageStash& st) { return st.ipu != sim.plan.stages[st.stage].ipu; });
  });
}

// The figures of the runs side by side: a label, then one column per mode run.
class FigureRows {
public:
  FigureRows(std::ostringstream& out, const std::vector<ModeRun>& runs, std::size_t label, std::size_t column)
      : out_(out), runs_(runs), label_(label), column_(column) {}

  // The blank label cell, then each run's mode (and a pipelined run's schedule).
  void mode_names() {
    out_ << pad("", label_);
    for (const ModeRun& run : runs_)
      out_ << pad(mode_name(run.metrics.mode) + (run.metrics.mode == Mode::Pipelined ? " (" + run.metrics.schedule + ")" : ""),
                  column_);
    out_ << "\n";
  }

  template <typename Cell>
  void row(const std::string& name, Cell cell) {
    out_ << pad(name, label_);
    for (const ModeRun& run : runs_) out_ << pad(cell(run.metrics), column_);
    out_ << "\n";
  }

  // Past kDetailIpus rows of one per-IPU figure, its range: the lowest and the highest value
  // and the IPUs holding them (value_of returns NaN for an IPU without the figure).
  template <typename NameOf, typename ValueOf, typename Format>
  void range_rows(const std::string& what, const std::string& unit, std::size_t n, NameOf name_of, ValueOf value_of,
                  Format format) {
    const auto ends = [=](const RunMetrics& r) {
      std::pair<std::size_t, std::size_t> e{n, n};
      for (std::size_t i = 0; i < n; ++i) {
        const double v = value_of(r, i);
        if (!std::isfinite(v)) continue;
        if (e.first == n || v < value_of(r, e.first)) e.first = i;
        if (e.second == n || v > value_of(r, e.second)) e.second = i;
      }
      return e;
    };
    row(what + ", " + std::to_string(n) + " " + unit, [=](const RunMetrics& r) {
      const auto [low, high] = ends(r);
      return low == n ? std::string("-") : format(value_of(r, low)) + " .. " + format(value_of(r, high));
    });
    row("  lowest / highest on", [=](const RunMetrics& r) {
      const auto [low, high] = ends(r);
      return low == n ? std::string("-") : name_of(r, low) + " / " + name_of(r, high);
    });
  }

private:
  std::ostringstream& out_;
  const std::vector<ModeRun>& runs_;
  const std::size_t label_, column_;
};

// Step time, throughput (of samples, tokens, sequences), MFU, cost, latency and replicas.
void throughput_rows(FigureRows& rows, const Scenario& sc, const Simulation& sim, const ModelFigures& model) {
  rows.row("step time", [](const RunMetrics& r) { return format_seconds(r.step_time_s); });
  rows.row("micro-batches per step", [](const RunMetrics& r) { return std::to_string(r.micro_batches); });
  rows.row("throughput", [](const RunMetrics& r) { return format_rate(r.throughput_samples_per_s, "samples/s"); });
  const int ipus_per_replica = static_cast<int>(sim.plan.ipus.size() * sc.execution.tensor_parallel);
  const auto llm = [&](const RunMetrics& r) { return run_llm_figures(sc.hardware, model, r, ipus_per_replica); };
  if (model.tokens_per_sample)
    rows.row("throughput (tokens)", [&](const RunMetrics& r) { return format_rate(*llm(r).tokens_per_s, "tokens/s"); });
  rows.row("model FLOPs utilisation", [&](const RunMetrics& r) { return format_percent(llm(r).mfu); });
  if (model.tokens_per_sample && sc.hardware.price_per_ipu_hour > 0)
    rows.row("cost per 1M tokens", [&](const RunMetrics& r) { return format_fixed(*llm(r).cost_per_million_tokens, 4); });
  if (sc.execution.sequences_per_sample != 1)
    rows.row("throughput (sequences)",
             [](const RunMetrics& r) { return format_rate(r.throughput_sequences_per_s, "sequences/s"); });
  rows.row("latency mean", [](const RunMetrics& r) { return format_seconds(r.latency_s.mean); });
  rows.row("latency min / max", [](const RunMetrics& r) {
    return format_seconds(r.latency_s.min) + " / " + format_seconds(r.latency_s.max);
  });
  if (sc.execution.replicas > 1) {
    rows.row("replicas", [](const RunMetrics& r) { return std::to_string(r.replicas); });
    rows.row("gradient all-reduce", [](const RunMetrics& r) {
      return format_seconds(r.allreduce_s) + " (" + format_percent(r.allreduce_s / r.step_time_s) + ")";
    });
  }
}

// Where the IPUs' time goes: computing, idle by cause, copies, syncs, host I/O, Streaming Memory.
void time_share_rows(FigureRows& rows, const Scenario& sc, const Simulation& sim) {
  rows.row("IPU time computing", [](const RunMetrics& r) { return format_percent(time_shares(r).compute); });
  if (sc.execution.tensor_parallel > 1)
    rows.row("  in tp all-reduces", [&](const RunMetrics& r) {
      bool recompute = false;
      for (const ModeRun& run : sim.runs)
        if (&run.metrics == &r) recompute = run.schedule.recompute;
      return format_percent(time_shares(r).compute * tensor_parallel_fraction(sim.plan, recompute));
    });
  rows.row("IPU time idle (bubble)", [](const RunMetrics& r) { return format_percent(r.bubble_fraction); });
  bool update_waits = false, turn_waits = false;
  for (const ModeRun& run : sim.runs) {
    update_waits = update_waits || time_shares(run.metrics).idle.update_wait_s > 0;
    turn_waits = turn_waits || time_shares(run.metrics).idle.turn_wait_s > 0;
  }
  rows.row("  fill and flush", [](const RunMetrics& r) { return format_percent(time_shares(r).idle.fill_flush_s); });
  rows.row("  imbalance", [](const RunMetrics& r) { return format_percent(time_shares(r).idle.imbalance_s); });
  rows.row("  waiting on copies", [](const RunMetrics& r) { return format_percent(time_shares(r).idle.copy_wait_s); });
  if (update_waits)
    rows.row("  waiting on updates", [](const RunMetrics& r) { return format_percent(time_shares(r).idle.update_wait_s); });
  if (turn_waits)
    rows.row("  waiting for its turn", [](const RunMetrics& r) { return format_percent(time_shares(r).idle.turn_wait_s); });
  rows.row("IPU time in copies", [](const RunMetrics& r) { return format_percent(time_shares(r).exchange); });
  rows.row("IPU time in syncs", [](const RunMetrics& r) { return format_percent(time_shares(r).sync); });
  rows.row("IPU time in host I/O", [](const RunMetrics& r) { return format_percent(time_shares(r).host_io); });
  if (sc.execution.training && sc.execution.optimizer_state_off_chip)
    rows.row("IPU time in Streaming Mem", [](const RunMetrics& r) { return format_percent(time_shares(r).streaming_memory); });
}

// The bottleneck IPU and stage, and with both modes run, pipelined against sharded.
void bottleneck_rows(FigureRows& rows, const Simulation& sim, bool placed, int group) {
  const RunMetrics* sharded = nullptr;
  const RunMetrics* pipelined = nullptr;
  for (const ModeRun& run : sim.runs) (run.metrics.mode == Mode::Sharded ? sharded : pipelined) = &run.metrics;
  rows.row("bottleneck", [placed, group](const RunMetrics& r) {
    for (const IpuMetrics& m : r.ipus)
      if (m.id == r.bottleneck_ipu)
        return physical_ipu_name(m, placed, group) + ", stage " + std::to_string(r.bottleneck_stage);
    return "IPU " + std::to_string(r.bottleneck_ipu) + ", stage " + std::to_string(r.bottleneck_stage);
  });
  if (sharded && pipelined)
    rows.row("speed-up over sharded", [&](const RunMetrics& r) {
      return format_fixed(sharded->step_time_s / r.step_time_s, 2) + "x";
    });
}

// Utilisation per physical IPU, or past kDetailIpus per virtual IPU over the replicas (the
// JSON document keeps every IPU), or past kDetailIpus virtual IPUs too, its range.
void utilisation_rows(FigureRows& rows, const Simulation& sim, bool placed, int group) {
  const std::size_t ipu_count = sim.runs.empty() ? 0 : sim.runs.front().metrics.ipus.size();
  std::vector<int> virtual_ipus;
  for (const IpuMetrics& m : ipu_count > 0 ? sim.runs.front().metrics.ipus : std::vector<IpuMetrics>{})
    if (std::find(virtual_ipus.begin(), virtual_ipus.end(), m.virtual_ipu) == virtual_ipus.end())
      virtual_ipus.push_back(m.virtual_ipu);
  if (ipu_count > kDetailIpus && virtual_ipus.size() > kDetailIpus) {
    rows.range_rows(
        "utilisation", "IPUs", ipu_count,
        [placed, group](const RunMetrics& r, std::size_t i) { return physical_ipu_name(r.ipus.at(i), placed, group); },
        [](const RunMetrics& r, std::size_t i) { return i < r.ipus.size() ? r.ipus[i].utilization : kNoValue; },
        [](double v) { return format_percent(v); });
  } else if (ipu_count <= kDetailIpus) {
    for (std::size_t i = 0; i < ipu_count; ++i)
      rows.row(physical_ipu_name(sim.runs.front().metrics.ipus[i], placed, group) + " utilisation",
               [i](const RunMetrics& r) { return format_percent(r.ipus[i].utilization); });
  } else {
    for (const int v : virtual_ipus)
      rows.row(virtual_ipu_name(v, placed) + " utilisation, all replicas", [v](const RunMetrics& r) {
        double low = 1, high = 0;
        for (const IpuMetrics& m : r.ipus)
          if (m.virtual_ipu == v) low = std::min(low, m.utilization), high = std::max(high, m.utilization);
        return format_percent(low) == format_percent(high) ? format_percent(low)
                                                           : format_percent(low) + " - " + format_percent(high);
      });
  }
}

// Memory per virtual IPU (every replica holds the same): its total and its fullest tile,
// or past kDetailIpus virtual IPUs their ranges and how many do not fit.
void memory_rows(FigureRows& rows, const Simulation& sim, bool placed) {
  const std::size_t virtual_count = sim.runs.empty() ? 0 : sim.runs.front().metrics.memory.ipus.size();
  const auto memory_name = [placed](const RunMetrics& r, std::size_t i) {
    return virtual_ipu_name(r.memory.ipus.at(i).id, placed);
  };
  if (virtual_count > kDetailIpus) {
    rows.range_rows(
        "memory", placed ? "vIPUs" : "IPUs", virtual_count, memory_name,
        [](const RunMetrics& r, std::size_t i) { return i < r.memory.ipus.size() ? r.memory.ipus[i].total_bytes : kNoValue; },
        [](double v) { return format_bytes(v); });
    rows.range_rows(
        "fullest tile", placed ? "vIPUs" : "IPUs", virtual_count, memory_name,
        [](const RunMetrics& r, std::size_t i) {
          return i < r.memory.ipus.size() ? r.memory.ipus[i].fullest_tile_bytes / r.memory.ipus[i].tile_capacity_bytes
                                          : kNoValue;
        },
        [](double v) { return format_fixed(100 * v, 0) + " %"; });
    rows.row(std::string(placed ? "vIPUs" : "IPUs") + " out of memory", [](const RunMetrics& r) {
      return std::to_string(std::count_if(r.memory.ipus.begin(), r.memory.ipus.end(),
                                          [](const IpuMemory& m) { return !m.fits; }));
    });
  }
  for (std::size_t i = 0; i < virtual_count && virtual_count <= kDetailIpus; ++i)
    rows.row(virtual_ipu_name(sim.runs.front().metrics.memory.ipus[i].id, placed) + " memory", [i](const RunMetrics& r) {
      if (i >= r.memory.ipus.size()) return std::string("-");
      const IpuMemory& m = r.memory.ipus[i];
      return format_bytes(m.total_bytes) + (m.fits ? "" : " OOM");
    });
  for (std::size_t i = 0; i < virtual_count && virtual_count <= kDetailIpus; ++i)
    rows.row(virtual_ipu_name(sim.runs.front().metrics.memory.ipus[i].id, placed) + " fullest tile", [i](const RunMetrics& r) {
      if (i >= r.memory.ipus.size()) return std::string("-");
      const IpuMemory& m = r.memory.ipus[i];
      return format_bytes(m.fullest_tile_bytes) + " (" +
             format_fixed(100 * m.fullest_tile_bytes / m.tile_capacity_bytes, 0) + " %)";
    });
}

// Past kDetailIpus stashes, the deepest and the largest instead of a row per stash.
void stash_summary_rows(FigureRows& rows, std::size_t stash_count) {
  rows.row("deepest stash, " + std::to_string(stash_count) + " stages", [](const RunMetrics& r) {
    const StageStash* deepest = nullptr;
    for (const StageStash& st : r.memory.stashes)
      if (!deepest || st.depth > deepest->depth) deepest = &st;
    return deepest ? "x" + std::to_string(deepest->depth) + " (stage " + std::to_string(deepest->stage) + ")"
                   : std::string("-");
  });
  rows.row("largest stash", [](const RunMetrics& r) {
    const StageStash* largest = nullptr;
    for (const StageStash& st : r.memory.stashes)
      if (!largest || st.slot_bytes * st.depth > largest->slot_bytes * largest->depth) largest = &st;
    return largest ? format_bytes(largest->slot_bytes * largest->depth) + " (stage " +
                         std::to_string(largest->stage) + ")"
                   : std::string("-");
  });
}

// The stored activations of each forward stage, when training.
void stash_rows(FigureRows& rows, const Scenario& sc, const Simulation& sim, bool placed) {
  if (!sc.execution.training || sim.plan.phased) return;  // phased: stored activations wait in Streaming Memory
  // Each stage on its IPU, then the second copies a schedule runs on another IPU (DualPipe).
  std::vector<std::pair<int, int>> stashes;
  for (int s = 0; s < sim.plan.forward_stage_count; ++s) stashes.emplace_back(s, sim.plan.stages[s].ipu);
  for (const ModeRun& run : sim.runs)
    for (const StageStash& st : run.metrics.memory.stashes)
      if (std::find(stashes.begin(), stashes.end(), std::pair{st.stage, st.ipu}) == stashes.end())
        stashes.emplace_back(st.stage, st.ipu);
  if (stashes.size() > kDetailIpus) {
    stash_summary_rows(rows, stashes.size());
    stashes.clear();
  }
  for (const auto& stash : stashes) {
    const int s = stash.first, ipu = stash.second;  // clang 14 captures no structured bindings
    rows.row("stash stage " + std::to_string(s) + " (" + virtual_ipu_name(ipu, placed) +
                 (ipu == sim.plan.stages[s].ipu ? ")" : ", second copy)"),
             [s, ipu](const RunMetrics& r) {
               for (const StageStash& st : r.memory.stashes)
                 if (st.stage == s && st.ipu == ipu)
                   return "x" + std::to_string(st.depth) + " = " + format_bytes(st.slot_bytes * st.depth);
               return std::string("-");
             });
  }
}

// Bytes per link direction, or past kDetailIpus of them a summary.
void link_rows(FigureRows& rows, const Simulation& sim) {
  std::vector<std::string> link_names;
  for (const ModeRun& run : sim.runs)
    for (const LinkTraffic& l : run.metrics.links)
      if (std::find(link_names.begin(), link_names.end(), l.name) == link_names.end()) link_names.push_back(l.name);
  if (link_names.size() <= kDetailIpus) {
    for (const std::string& name : link_names)
      rows.row("bytes " + name, [&name](const RunMetrics& r) {
        for (const LinkTraffic& l : r.links)
          if (l.name == name) return format_bytes(l.bytes);
        return std::string("0 B");
      });
  } else {  // the links that carried traffic, their total and the busiest (JSON: every link)
    rows.row("link directions used", [](const RunMetrics& r) { return std::to_string(r.links.size()); });
    rows.row("bytes over them", [](const RunMetrics& r) {
      double total = 0;
      for (const LinkTraffic& l : r.links) total += l.bytes;
      return format_bytes(total);
    });
    rows.row("busiest link", [](const RunMetrics& r) {
      const LinkTraffic* busiest = nullptr;
      for (const LinkTraffic& l : r.links)
        if (!busiest || l.bytes > busiest->bytes) busiest = &l;
      return busiest ? busiest->name + " " + format_bytes(busiest->bytes) : std::string("-");
    });
  }
}

// The out-of-memory verdicts of each run, and what would make it fit.
void out_of_memory_notes(std::ostringstream& out, const Simulation& sim, bool placed) {
  for (const ModeRun& run : sim.runs) {
    // Past three IPUs out of memory, the three fullest and a count (JSON: every one).
    std::vector<const IpuMemory*> full;
    for (const IpuMemory& m : run.metrics.memory.ipus)
      if (!m.fits) full.push_back(&m);
    if (full.size() > kOutOfMemoryDetail)
      std::stable_sort(full.begin(), full.end(), [](const IpuMemory* a, const IpuMemory* b) {
        return a->fullest_tile_bytes / a->tile_capacity_bytes > b->fullest_tile_bytes / b->tile_capacity_bytes;
      });
    for (std::size_t i = 0; i < full.size() && i < kOutOfMemoryDetail; ++i)
      out << "\nOUT OF MEMORY (" << mode_name(run.metrics.mode) << "): " << out_of_memory_verdict(*full[i], placed)
          << "\n";
    if (full.size() > kOutOfMemoryDetail)
      out << "  ... and " << full.size() - kOutOfMemoryDetail << " more " << (placed ? "virtual IPUs" : "IPUs")
          << " out of memory, less full (--json lists every one: runs[].memory.ipus)\n";
    if (!run.metrics.memory.fits && !run.metrics.memory.fixes.empty())
      out << "  It " << fixes_sentence(run.metrics.memory.fixes) << ".\n";
  }
}

// Runs whose loops never settled into a period were simulated in full: said, with how much.
void not_periodic_notes(std::ostringstream& out, const Simulation& sim) {
  for (const ModeRun& run : sim.runs)
    if (!run.metrics.simulation.not_periodic.empty()) {
      out << "\nNote (" << mode_name(run.metrics.mode) << "): the state of ";
      for (std::size_t i = 0; i < run.metrics.simulation.not_periodic.size(); ++i)
        out << (i ? ", " : "") << "\"" << run.metrics.simulation.not_periodic[i] << "\"";
      out << " never repeated (IPUs at different rates, or contention that does not settle), so "
          << (run.metrics.simulation.not_periodic.size() > 1 ? "those loops were" : "that loop was")
          << " simulated in full: " << run.metrics.simulation.steps_simulated << " of "
          << run.metrics.simulation.steps_total << " program steps.\n";
    }
}

} // namespace

std::string render_table(const Scenario& sc, const Simulation& sim) {
  std::ostringstream out;
  const ModelFigures model = model_figures(sc);
  scenario_header(out, sc, model);
  // Replicated or placed: the physical IPUs of the utilisation rows are not the virtual
  // IPUs of the plan and memory rows, so each is named for what it is.
  const bool placed = std::any_of(sim.runs.begin(), sim.runs.end(), [](const ModeRun& run) { return ipus_placed(run.metrics); });
  plan_section(out, sc, sim.plan, placed);
  out << "\n";

  const std::size_t label = placed ? 46 : has_second_copies(sim) ? 36 : 26, column = 24;
  FigureRows rows(out, sim.runs, label, column);
  rows.mode_names();
  throughput_rows(rows, sc, sim, model);
  time_share_rows(rows, sc, sim);
  const int group = static_cast<int>(sc.execution.tensor_parallel);
  bottleneck_rows(rows, sim, placed, group);
  utilisation_rows(rows, sim, placed, group);
  memory_rows(rows, sim, placed);
  stash_rows(rows, sc, sim, placed);
  link_rows(rows, sim);

  out_of_memory_notes(out, sim, placed);
  const std::string why = explain_runs(sc, sim);
  if (!why.empty()) out << "\nWhy: " << why << "\n";
  not_periodic_notes(out, sim);
  return out.str();
}

} // namespace ipusim
