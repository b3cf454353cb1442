#include "sim/io/model_loader.hpp"
#include "sim/simulate/simulation.hpp"

#include <algorithm>
#include <optional>
#include <ostream>

#include "sim/base/forked.hpp"
#include "sim/engine/log_channel.hpp"
#include "sim/plan/routes.hpp"
#include "sim/simulate/run_estimate.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

namespace {

// Both observers at once: metrics as the run goes, and the log for a trace.
class Tee : public RunObserver {
public:
  Tee(RunObserver& a, RunObserver* b) : a_(a), b_(b) {}
  void on_event(const Event& e) override {
    a_.on_event(e);
    if (b_) b_->on_event(e);
  }
  void on_transfer(const TransferRecord& t) override {
    if (a_.wants_transfers()) a_.on_transfer(t);
    if (b_) b_->on_transfer(t);
  }
  bool wants_transfers() const override { return a_.wants_transfers() || b_; }
  bool wants_every_step() const override { return a_.wants_every_step() || b_; }
  // Each its own way: the metrics add the periods up, the log takes every event.
  void on_repeat(const RepeatedPeriods& r) override {
    a_.on_repeat(r);
    if (b_) b_->on_repeat(r);
  }
  // A log takes every IPU's events: the mirrors' too.
  bool reports_mirrors() const override { return a_.reports_mirrors() && !b_; }
  void on_mirrors(const MirroredUnits& units) override { a_.on_mirrors(units); }

private:
  RunObserver& a_;
  RunObserver* b_;
};

// What the simulation measured, each field once for both directions (the parent knows the
// metrics' other fields).
template <class Wire, class Metrics> void measured_fields(Wire& w, Metrics& m) {
  w(m.step_time_s);
  w(m.throughput_samples_per_s);
  w(m.throughput_sequences_per_s);
  w(m.latency_s);
  w(m.bubble_fraction);
  w(m.allreduce_s);
  w(m.activities);
  w(m.bottleneck_ipu);
  w(m.bottleneck_stage);
  w.list(m.ipus, [&](auto& ipu) { w(ipu); });
  link_traffic_fields(w, m.links);
  w(m.simulation.steps_total);
  w(m.simulation.steps_simulated);
  w(m.simulation.ipus_simulated);
  w.list(m.simulation.not_periodic, [&](auto& name) { w(name); });
  w(m.simulation.collective_groups);
  w(m.simulation.collectives_simulated_because);
}

void send_metrics(ByteWriter& out, const RunMetrics& m) {
  out.record('M');
  Writing w{out};
  measured_fields(w, m);
}

void receive_metrics(ByteReader& in, RunMetrics& m) {
  Reading r{in};
  measured_fields(r, m);
}

// `mirrors`: units of replicas reported from the first one's simulation where they run alike
// (EngineOptions::mirror_replicas); a run where one did not is made again without.
EngineOptions engine_options(const SimulateOptions& options, bool mirrors) {
  EngineOptions engine;
  engine.steady_state = !options.exact_full;
  engine.collectives_by_dataflow = !options.exact_full;
  engine.mirror_replicas = mirrors && !options.exact_full;
  return engine;
}

ModeRun run_mode(Mode mode, Schedule schedule, const Scenario& sc, const SimulateOptions& options, bool mirrors = true);

ModeRun run_mode_here(Mode mode, Schedule schedule, const Scenario& sc, const SimulateOptions& options,
                      bool mirrors = true) {
  ModeRun run;
  MetricsAccumulator metrics(mode, schedule, sc.execution);
  LogCollector log;
  Tee both(metrics, options.keep_log ? &log : nullptr);
  RunSummary summary;
  try {
    summary = run_engine_in_process(schedule, sc.hardware, both, engine_options(options, mirrors));
  } catch (const MirrorsDiverged&) {
    return (engine_can_simulate_again() ? run_mode_here : run_mode)(mode, std::move(schedule), sc, options, false);
  }
  run.metrics = metrics.finish(summary);
  run.log = make_log(std::move(log.events), std::move(log.transfers), summary);
  run.schedule = std::move(schedule);
  return run;
}

// Simulates in a forked child that computes the metrics itself and sends them back, with
// the events and transfers as they happen when the log is kept.
ModeRun run_mode(Mode mode, Schedule schedule, const Scenario& sc, const SimulateOptions& options, bool mirrors) {
  ModeRun run;
  LogCollector log;
  RunSummary summary;
  bool diverged = false;
  run.metrics = schedule_metrics(mode, schedule, sc.execution);  // the parent's share
  fork_simulation(
      schedule,
      [&](ByteWriter& out) {
        MetricsAccumulator metrics(mode, schedule, sc.execution);
        LogSender sender(out);
        Tee both(metrics, options.keep_log ? &sender : nullptr);
        try {
          const RunSummary s = run_engine_in_process(schedule, sc.hardware, both, engine_options(options, mirrors));
          send_metrics(out, metrics.finish(s));
          send_summary(out, s);
        } catch (const MirrorsDiverged&) {
          out.record('D');  // nothing it reported holds: the parent simulates again
          send_summary(out, RunSummary{});
        }
      },
      [&](ByteReader& in) {
        summary = receive_log(in, log, [&](char tag, ByteReader& record) {
          if (tag == 'M') receive_metrics(record, run.metrics);
          if (tag == 'D') diverged = true;
          return tag == 'M' || tag == 'D';
        });
      });
  if (diverged) return run_mode(mode, std::move(schedule), sc, options, false);
  run.log = make_log(std::move(log.events), std::move(log.transfers), summary);
  run.schedule = std::move(schedule);
  return run;
}

// Runs larger than this, or longer when simulated in full, are announced before they start.
constexpr double kNoteBytes = 1024.0 * 1024 * 1024;
constexpr double kNoteSeconds = 60;

} // namespace

Simulation simulate(const Scenario& scenario, const std::vector<Mode>& modes, const SimulateOptions& options) {
  Simulation sim;
  std::optional<ModelGraph> built;
  const ModelGraph& graph = options.graph != nullptr ? *options.graph : built.emplace(build_graph(scenario.model));
  sim.plan = options.plan != nullptr ? std::move(*options.plan) : make_plan(scenario, graph, modes);
  check_connected(scenario.hardware);  // a disconnected system is bad input, reported before simulating
  check_run_size(scenario, sim.plan);
  std::vector<Schedule> schedules;
  for (Mode mode : modes) schedules.push_back(make_schedule(mode, scenario, sim.plan));
  sim.estimate = estimate_schedules(scenario, sim.plan, modes, schedules, options.keep_log);
  if (options.notes != nullptr) {
    say_import_warnings(scenario.model, *options.notes);
    if (const auto warning = missing_loss_warning(scenario, graph))
      *options.notes << "ipusim: warning: " << scenario.file << ": " << *warning << "\n" << std::flush;
    const auto warning = sim.plan.phased ? std::nullopt : unused_phases_warning(scenario.model, graph);
    if (warning)
      *options.notes << "ipusim: warning: " << scenario.model.file << ": " << *warning << "\n" << std::flush;
    if (const auto optimizer = missing_optimizer_warning(scenario))
      *options.notes << "ipusim: warning: " << scenario.file << ": " << *optimizer << "\n" << std::flush;
    if (const auto unused = unused_settings_warning(scenario, sim.plan.phased))
      *options.notes << "ipusim: warning: " << scenario.file << ": " << *unused << "\n" << std::flush;
    if (const auto kept = kept_whole_note(scenario))
      *options.notes << "ipusim: note: " << scenario.model.file << ": " << *kept << "\n" << std::flush;
  }
  // The time estimate is for the full simulation; the steady state's is usually far less, but
  // not where the faster stages of a schedule that runs ahead outpace the slower ones.
  std::optional<std::string> grows;
  if (!sim.estimate.grows_with_micro_batches.empty())
    grows = ": " + sim.estimate.grows_with_micro_batches +
                "'s faster stages run ahead of its slower ones, at another rate, so no period of its loop repeats "
                "until they are done: the simulation's time grows with the micro-batches (docs/benchmark.md, "
                "\"Every schedule at G = 10^6\")";
  if (options.notes != nullptr &&
      (sim.estimate.peak_bytes > kNoteBytes ||
       ((options.exact_full || grows) && sim.estimate.seconds > kNoteSeconds)))
    *options.notes << "ipusim: note: this run needs " << describe_estimate(sim.estimate)
                   << (options.exact_full ? "" : grows.value_or("")) << "\n" << std::flush;
  if (options.notes != nullptr && is_what_if_schedule(scenario.execution.schedule) &&
      std::find(modes.begin(), modes.end(), Mode::Pipelined) != modes.end())
    *options.notes << "ipusim: note: " << scenario.execution.schedule
                   << " is a what-if schedule (from the GPU literature): no IPU framework runs it ("
                   << framework_schedules() << ")\n" << std::flush;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const bool here = options.in_process && (i + 1 == modes.size() || engine_can_simulate_again());
    ModeRun run = (here ? run_mode_here : run_mode)(modes[i], std::move(schedules[i]), scenario, options, true);
    run.metrics.memory = options.memory != nullptr ? options.memory->at(i)
                                                   : estimate_memory(scenario, sim.plan, run.schedule.stash_depth,
                                                                     run.schedule.recompute, run.schedule.mirrors,
                                                                     run.schedule.stash_at_once);
    sim.runs.push_back(std::move(run));
  }
  return sim;
}

} // namespace ipusim
