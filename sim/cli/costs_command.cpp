// ipusim costs SCENARIO: the cost model's per-op view of a scenario's stages, no simulation.
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/output/cost_table.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim::cli {

namespace {

struct CostsOptions {
  std::string path;
  std::vector<std::string> sets;
  int stage = -1;
  bool per_op = false;
};

} // namespace

Command add_costs_command(CLI::App& app) {
  auto o = std::make_shared<CostsOptions>();
  auto* cmd = app.add_subcommand(
      "costs", "Show where each forward stage's time goes, op type by op type, as the cost model sees it");
  cmd->add_option("scenario", o->path, "Scenario file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", o->sets, "Override a field first: path=value; repeatable")->allow_extra_args(false);
  cmd->add_option("--stage", o->stage, "Only this forward stage");
  cmd->add_flag("--ops", o->per_op, "One row per op instead of per op type");
  return [o] {
    const Scenario sc = load_scenario(o->path, parse_overrides(o->sets));
    const Plan plan = make_plan(sc, build_graph(sc.model));
    std::cout << render_cost_table(sc, plan, o->stage, o->per_op);
    return kExitOk;
  };
}

} // namespace ipusim::cli
