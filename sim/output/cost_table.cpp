#include "sim/output/cost_table.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "sim/base/units.hpp"

namespace ipusim {

namespace {

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

struct Row {
  std::string name;
  int count = 0;
  OpCost forward, backward;
};

void add(OpCost& into, const OpCost& c) {
  into.compute_cycles += c.compute_cycles;
  into.exchange_cycles += c.exchange_cycles;
  into.sync_cycles += c.sync_cycles;
  into.temp_bytes_per_tile = std::max(into.temp_bytes_per_tile, c.temp_bytes_per_tile);
}

std::string split(const OpCost& c, double clock) {
  return format_seconds(c.cycles() / clock) + " (" + format_seconds(c.compute_cycles / clock) + " / " +
         format_seconds(c.exchange_cycles / clock) + " / " + format_seconds(c.sync_cycles / clock) + ")";
}

} // namespace

std::string render_cost_table(const Scenario& sc, const Plan& plan, int stage, bool per_op) {
  std::ostringstream out;
  const double clock = plan.clock_hz;
  out << "Cost model " << sc.execution.cost_model << ", micro-batch " << sc.execution.micro_batch_size << ", "
      << sc.hardware.ipu.name << " at " << format_fixed(clock / 1e9, 3) << " GHz. Times per micro-batch: total "
      << "(compute / on-chip exchange / syncs).\n";
  for (int s = 0; s < plan.forward_stage_count; ++s) {
    if (stage >= 0 && s != stage) continue;
    const PlanStage& st = plan.stages[static_cast<std::size_t>(s)];
    std::vector<Row> rows;
    std::map<std::string, std::size_t> index;
    OpCost total_f, total_b;
    for (std::size_t op : st.ops) {
      const Op& o = sc.model.ops[op];
      const std::string key = per_op ? o.name : o.type;
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, rows.size()).first;
        rows.push_back(Row{key, 0, {}, {}});
      }
      Row& r = rows[it->second];
      ++r.count;
      add(r.forward, plan.op_timings[op].forward);
      add(r.backward, plan.op_timings[op].backward);
      add(total_f, plan.op_timings[op].forward);
      add(total_b, plan.op_timings[op].backward);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.forward.cycles() + a.backward.cycles() > b.forward.cycles() + b.backward.cycles();
    });
    out << "\nStage " << s << " on IPU " << st.ipu << ": " << st.ops.size() << " ops, forward "
        << split(total_f, clock);
    if (plan.training) out << ", backward " << split(total_b, clock);
    out << "\n  " << pad(per_op ? "op" : "op type", 36) << pad("n", 5) << pad("share", 7)
        << pad("forward", 40) << (plan.training ? pad("backward", 40) : "") << "temp/tile\n";
    const double whole = total_f.cycles() + total_b.cycles();
    for (const Row& r : rows) {
      const double mine = r.forward.cycles() + r.backward.cycles();
      out << "  " << pad(r.name, 36) << pad(std::to_string(r.count), 5)
          << pad(format_percent(whole > 0 ? mine / whole : 0), 7) << pad(split(r.forward, clock), 40)
          << (plan.training ? pad(split(r.backward, clock), 40) : "")
          << format_bytes(std::max(r.forward.temp_bytes_per_tile, r.backward.temp_bytes_per_tile)) << "\n";
    }
  }
  return out.str();
}

} // namespace ipusim
