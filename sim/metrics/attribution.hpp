#pragma once
// Why an IPU was idle: its idle time split by cause, and the IPU that paced the step.
// docs/step-time.md states each rule; in short:
//  - an IPU waits at a barrier (a sync) or for an asynchronous copy; nothing else idles it;
//  - a wait closing a copy phase, or for a copy in flight, is waiting on copies;
//  - a wait closing a weight-update phase is waiting on the updates of other IPUs;
//  - in runs that work one IPU at a time (sharded, tf-sequential) a wait with no work of
//    its own is waiting for its turn;
//  - in pipelines, a wait in a cycle where some of its stages are not yet started or
//    already finished for this batch is fill and flush, up to those stages' work per
//    micro-batch; the rest, waiting for the slowest IPU of the cycle, is imbalance.
//
// Computed from the engine's events as they come, skipped steady-state periods added up
// (add_periods):
// what the stretch between two barriers holds comes from the programs (ProgramCursor), and
// a wait is kept only until it is known which stages it lacks, so memory does not grow
// with the number of micro-batches.
#include <memory>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/io/scenario.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

// Sums to the IPU's idle time.
struct IdleBreakdown {
  double fill_flush_s = 0;
  double imbalance_s = 0;
  double copy_wait_s = 0;
  double update_wait_s = 0;
  double turn_wait_s = 0;
};

enum class IdleCause { FillFlush, Imbalance, CopyWait, UpdateWait, TurnWait };
// "fill-flush", "imbalance", "copy-wait", "update-wait", "turn-wait".
const char* idle_cause_name(IdleCause cause);

// One stretch of an IPU's idle time and its cause (recorded only when asked: a trace).
// A wait split between fill/flush and imbalance shows its fill/flush part first.
struct IdleSlice {
  int ipu = 0;
  double start = 0, end = 0;
  IdleCause cause = IdleCause::Imbalance;
};

struct IpuAttribution {
  int ipu = 0;
  IdleBreakdown idle;
  double update_s = 0;         // computing weight updates (part of busy time)
  double pipeline_work_s = 0;  // forward/backward compute and host I/O: the work that paces a pipeline
  int heaviest_stage = -1;     // the stage with the most compute and host I/O on this IPU
};

struct Attribution {
  std::vector<IpuAttribution> ipus;  // in the order of schedule.programs
  int bottleneck_ipu = -1;           // the IPU with the most pipeline work
  int bottleneck_stage = -1;         // its heaviest stage
  std::vector<IdleSlice> idle_slices;  // by IPU and start; only when recorded
};

// Takes a run's events (and, for asynchronous copies, its transfers) in the order the
// engine reports them. `schedule` must outlive it.
class TimeAttribution : public RunObserver {
public:
  // `record_idle_slices`: also keep every idle stretch (memory grows with the run).
  TimeAttribution(const Schedule& schedule, Mode mode, bool record_idle_slices = false);
  ~TimeAttribution() override;
  TimeAttribution(const TimeAttribution&) = delete;
  TimeAttribution& operator=(const TimeAttribution&) = delete;

  void on_event(const Event& event) override;
  void on_transfer(const TransferRecord& transfer) override;
  // Only schedules with asynchronous copies need the transfers (when their senders started).
  bool wants_transfers() const override;
  // `end_time`: the step's end, which closes the stretch after the last barrier.
  Attribution finish(double end_time);

  // Skipped steady-state periods without their events (MetricsAccumulator::on_repeat,
  // periodic.hpp): between begin_marks and end_marks, mark() keeps the state at the end of
  // each replayed period; periodic() says whether the last two periods changed it alike and
  // `periods` more fit in the loop; add_periods() then adds them. Not when idle slices are
  // recorded (they need every event).
  bool can_add_periods() const;
  void begin_marks();
  void mark();
  bool periodic(const RepeatedPeriods& repeat, std::int64_t periods) const;
  void add_periods(const RepeatedPeriods& repeat, std::int64_t periods);
  void end_marks();
  // Before any event: the IPUs of units 1 on get their sources' attribution at finish, and
  // only unit 0's events come (as MetricsAccumulator, which reports the mirrors, passes them on).
  void on_mirrors(const MirroredUnits& units) override;

private:
  class State;
  State& state();  // built at its first use, for unit 0's programs where units mirror it
  const Schedule& schedule_;
  Mode mode_;
  bool record_idle_slices_;
  bool wants_transfers_;
  MirroredUnits mirrors_;
  std::unique_ptr<State> state_;
};

} // namespace ipusim
