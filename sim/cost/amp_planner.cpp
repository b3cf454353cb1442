#include "sim/cost/amp_planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace ipusim {

namespace {

double ceil_div(double a, double b) { return std::ceil(a / b); }

// Worker cycles of the 1x1 AMP vertex for `elements` field positions (lib/poplin/
// PerformanceEstimation.hpp, getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat).
double worker_inner_cycles(double elements, bool float_acts, bool common_path, bool zeroing) {
  const double core = float_acts ? 8 : 4;
  if (elements <= 0) return float_acts || !common_path ? 24 : 20 + (zeroing ? 1 : 2);
  if (common_path) {
    if (elements == 1) return 31 + (zeroing ? 1 : 2);
    if (elements == 2) return 40 + (zeroing ? 1 : 2);
    return (zeroing ? 37 : 38) + (elements - 3) * core;
  }
  const double zero_per_group = float_acts ? 8 : 2;  // float partials always take the common path
  if (elements == 1) return (float_acts ? 47 : 39) + (zeroing ? 2 + zero_per_group : 0);
  if (elements == 2) return (float_acts ? 46 : 40) + (zeroing ? 2 + 2 * zero_per_group : 0);
  return (float_acts ? 46 : 41) + (zeroing ? 2 + zero_per_group * elements : 0) + (elements - 3) * core;
}

} // namespace

double amp_vertex_cycles(const TileContext& ctx, DType dtype, DType partials, double conv_groups,
                         double input_groups, double output_groups, double field) {
  if (conv_groups <= 0 || input_groups <= 0 || output_groups <= 0 || field <= 0) return 0;
  const TileArchitecture& a = ctx.arch;
  const bool float_acts = dtype == DType::Float32;
  const bool float_partials = partials == DType::Float32 || float_acts;
  const int units = a.conv_units(dtype);
  const bool common_path = (!float_acts && units == 16) || float_partials;
  const double workers = a.worker_contexts;
  // Worker state retention saves cycles on half inputs (conv1x1WorkerRetentionSavings).
  const bool retains = !float_acts && (float_partials || units == 16);
  const double retention_total = retains ? 7 : 0, retention_per_group = retains ? 3 : 0;

  // The field is shared out between the workers; the slowest decides, the fastest pays 14 to tag.
  const double most = std::ceil(field / workers), least = std::floor(field / workers);
  auto inner = [&](bool zeroing) {
    const double slow = worker_inner_cycles(most, float_acts, common_path, zeroing) - retention_total;
    const double fast = worker_inner_cycles(least, float_acts, common_path, zeroing) - retention_total;
    return std::max(workers * slow, workers * fast + 14);
  };
  const double with_zeroing = inner(true), without_zeroing = inner(false);

  // Loading the AMP's weights: conv units x weights per unit, at the coefficient load rate.
  const double weight_bytes_per_unit = a.input_channels_per_group(dtype) * static_cast<double>(dtype_bytes(dtype));
  const double loads = std::floor(units * weight_bytes_per_unit / a.amp_weight_load_bytes_per_cycle);
  const double passes = 1;  // output channels per group == conv units
  const double common = common_path ? 1 : 0;
  const double excess = 1;
  return 50 + workers * (retention_total + retention_per_group * (input_groups * conv_groups - 1)) +
         conv_groups * (12 + common +
                        (input_groups - 1) *
                            (15 - common + excess + output_groups * (19 + passes * (6 + loads + without_zeroing))) +
                        (10 + excess + output_groups * (19 - common + passes * (7 + loads + with_zeroing))));
}

namespace {

// Split candidates for a dimension of `extent` grains: 1, powers of two and three times
// powers of two below it, and the extent itself (one grain per tile).
std::vector<double> split_candidates(double extent, double limit) {
  std::vector<double> out;
  for (double p = 1; p <= extent && p <= limit; p *= 2) {
    out.push_back(p);
    if (3 * p <= extent && 3 * p <= limit && p >= 1) out.push_back(3 * p);
  }
  if (extent <= limit) out.push_back(extent);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Cycles of the partial-sum reduction on one tile: `outputs` results of `depth` partials
// each (poplin getReduceCycleEstimate, the supervisor vertex).
double reduce_partials_cycles(const TileContext& ctx, double outputs, double depth, DType partials) {
  if (depth <= 1 || outputs <= 0) return 0;
  const double acc_width = partials == DType::Float32 ? 4 : 8;
  const double per_path = ctx.arch.vector_width(partials);
  const double per_loop = acc_width / std::min(acc_width, per_path) + 1;
  const double loops = std::ceil(std::ceil(outputs / acc_width) / ctx.arch.worker_contexts);
  return ctx.arch.worker_contexts * (32 + loops * (per_loop * depth + 9));
}

// Casting float partials to a half output (poplin estimateCastCycles).
double cast_cycles(const TileContext& ctx, double outputs, DType from, DType to) {
  if (from == to || outputs <= 0) return 0;
  const double per_worker = std::ceil(outputs / ctx.arch.worker_contexts);
  const double loads = std::ceil(per_worker / ctx.arch.vector_width(from));
  const double stores = std::ceil(per_worker / ctx.arch.vector_width(to));
  return (std::max(loads, stores) + 26) * ctx.arch.worker_contexts;
}

struct Candidate {
  MatMulPlan plan;
  double temp = 0;
};

Candidate evaluate(const TileContext& ctx, const MatMulShape& s, double gs, double ms, double ks, double ns,
                   double serial) {
  const TileArchitecture& a = ctx.arch;
  const double in_group = a.input_channels_per_group(s.dtype);
  const double out_group = a.conv_units(s.dtype);
  const double in_groups = ceil_div(s.inputs, in_group), out_groups = ceil_div(s.outputs, out_group);
  const double b = static_cast<double>(dtype_bytes(s.dtype));
  const double bp = static_cast<double>(dtype_bytes(ctx.partials));

  const double g_t = ceil_div(s.groups, gs), m_t = ceil_div(s.rows, ms);
  const double k_t = ceil_div(in_groups, ks), n_t = ceil_div(ceil_div(out_groups, ns), serial);

  // Operands each tile needs; a share of each is already there when laid out for this matmul.
  const double lhs_bytes = g_t * m_t * k_t * in_group * b;
  const double rhs_bytes = g_t * k_t * in_group * s.kernel_positions * n_t * out_group * b;
  const double lhs_received = lhs_bytes * (s.lhs_in_place ? 1 - 1 / ns : 1);
  const double rhs_received = rhs_bytes * (s.rhs_in_place ? 1 - 1 / ms : 1);
  // Tiles sharing an exchange bus receive the same rows together when the output split pairs them.
  const double lhs_rate = std::fmod(ns, a.tiles_per_exchange_bus) == 0 ? a.tiles_per_exchange_bus : 1;
  const double partial_bytes = g_t * m_t * n_t * out_group * bp;

  OpCost step;
  step.exchange_cycles = exchange_cycles(ctx, rhs_received) + (serial == 1 ? exchange_cycles(ctx, lhs_received, lhs_rate) : 0);
  if (step.exchange_cycles > 0) step.exchange_cycles += a.exchange_overhead_cycles;
  step.compute_cycles = amp_vertex_cycles(ctx, s.dtype, ctx.partials, g_t, k_t * s.kernel_positions, n_t, m_t);
  step.sync_cycles = a.compute_set_sync_cycles;
  double temp = lhs_bytes + rhs_bytes + partial_bytes;
  const double outputs_t = g_t * m_t * n_t * out_group;
  if (ks > 1) {
    // Each tile keeps 1/ks of its partials' outputs and receives the other tiles' partials for them.
    const double reduced = std::ceil(outputs_t / ks);
    step.exchange_cycles += a.exchange_overhead_cycles + exchange_cycles(ctx, reduced * (ks - 1) * bp);
    step.compute_cycles += reduce_partials_cycles(ctx, reduced, ks, ctx.partials);
    step.compute_cycles += cast_cycles(ctx, reduced, ctx.partials, s.output_dtype);
    step.sync_cycles += a.compute_set_sync_cycles;
    temp += reduced * (ks - 1) * bp;
  } else if (ctx.partials != s.output_dtype) {
    step.compute_cycles += cast_cycles(ctx, outputs_t, ctx.partials, s.output_dtype);
    step.sync_cycles += a.compute_set_sync_cycles;
  }
  Candidate c;
  c.plan.group_split = gs;
  c.plan.row_split = ms;
  c.plan.input_split = ks;
  c.plan.output_split = ns;
  c.plan.serial_passes = serial;
  c.plan.cost.compute_cycles = serial * step.compute_cycles;
  c.plan.cost.exchange_cycles = serial * step.exchange_cycles +
                                (serial > 1 ? exchange_cycles(ctx, lhs_received, lhs_rate) + a.exchange_overhead_cycles : 0);
  c.plan.cost.sync_cycles = serial * step.sync_cycles;
  c.temp = temp;
  c.plan.cost.temp_bytes_per_tile = temp;
  return c;
}

using PlanKey = std::tuple<double, double, double, double, double, int, int, bool, bool, double, double, int,
                           const TileArchitecture*, double>;

} // namespace

MatMulPlan plan_matmul(const TileContext& ctx, const MatMulShape& s) {
  static std::map<PlanKey, MatMulPlan> cache;
  const PlanKey key{s.groups, s.rows, s.inputs, s.outputs, s.kernel_positions, static_cast<int>(s.dtype),
                    static_cast<int>(s.output_dtype), s.lhs_in_place, s.rhs_in_place, ctx.tiles,
                    ctx.temp_budget_bytes, static_cast<int>(ctx.partials), &ctx.arch,
                    ctx.ipu.exchange_bytes_per_cycle_per_tile};
  if (auto it = cache.find(key); it != cache.end()) return it->second;

  const TileArchitecture& a = ctx.arch;
  const double in_groups = ceil_div(s.inputs, a.input_channels_per_group(s.dtype));
  const double out_groups = ceil_div(s.outputs, a.conv_units(s.dtype));
  const double tiles = std::max(1.0, ctx.tiles);
  Candidate best, smallest;
  bool have_best = false, have_smallest = false;
  for (double serial = 1; serial <= out_groups; serial *= 2) {
    for (double gs : split_candidates(s.groups, tiles))
      for (double ks : split_candidates(in_groups, tiles / gs))
        for (double ns : split_candidates(ceil_div(out_groups, serial), tiles / (gs * ks))) {
          const double ms = std::min(s.rows, std::floor(tiles / (gs * ks * ns)));
          if (ms < 1) continue;
          const Candidate c = evaluate(ctx, s, gs, ms, ks, ns, serial);
          if (!have_smallest || c.temp < smallest.temp) {
            smallest = c;
            have_smallest = true;
          }
          if (c.temp <= ctx.temp_budget_bytes && (!have_best || c.plan.cost.cycles() < best.plan.cost.cycles())) {
            best = c;
            have_best = true;
          }
        }
    if (have_best) break;  // more serial passes only ever cost time
  }
  MatMulPlan out = have_best ? best.plan : smallest.plan;
  out.fits = have_best;
  cache.emplace(key, out);
  return out;
}

} // namespace ipusim
