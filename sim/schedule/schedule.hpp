#pragma once
// Schedules turn a plan into per-IPU programs. They are chosen by name (the
// scenario's "schedule" for pipelined runs; "sharded" for sharded runs) from the
// registry below; adding one is a new file and a line in the registry.
#include <string>
#include <vector>

#include "sim/io/scenario.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/program.hpp"

namespace ipusim {

struct ScheduleContext {
  const Scenario& scenario;
  const Plan& plan;
  double sync_seconds;  // one inter-IPU sync among the plan's IPUs
};

struct ScheduleInfo {
  std::string name;
  std::string description;
  Schedule (*build)(const ScheduleContext& context);
};

const std::vector<ScheduleInfo>& schedules();
std::string schedule_names();

// Builds the program for a run in `mode`; throws InputError when the scenario asks
// for something the schedule cannot do (unknown name, too shallow a pipeline...).
Schedule make_schedule(Mode mode, const Scenario& scenario, const Plan& plan);

Schedule build_sharded(const ScheduleContext& context);
Schedule build_popart(const ScheduleContext& context);

// Shared pieces for schedule implementations.
class ProgramBuilder {
public:
  ProgramBuilder(const ScheduleContext& context, std::string name);

  Program& program_of(int ipu);
  // A barrier of every IPU, then `seconds` of sync.
  void sync_all(double seconds);
  // One copy phase: the given copies all move at once, framed by syncs (sync, copies, barrier).
  void exchange(const std::vector<const PlanCopy*>& copies);
  // Host input, compute (forward and/or backward) and host output of one stage for one micro-batch.
  void host_input(const PlanStage& stage, std::int64_t micro_batch);
  void compute(const PlanStage& stage, std::int64_t micro_batch);
  void host_output(const PlanStage& stage, std::int64_t micro_batch);
  // PopART's Serial weight update: IPU by IPU in virtual-graph order.
  void weight_updates();
  Schedule finish(std::int64_t micro_batches, int cycles);

private:
  const ScheduleContext& context_;
  Schedule schedule_;
};

} // namespace ipusim
