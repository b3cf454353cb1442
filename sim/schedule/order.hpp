#pragma once
// Schedule orders: what each device runs, op by op, for the GPU-literature pipeline schedules
// (interleaved 1F1B, zero bubble, V shapes, DualPipe). An order is data: per device a list of
// F (forward), B (input gradient), W (weight gradient) or BW (B then W at once) of one model
// chunk for one micro-batch; DualPipe also names pairs of an F and a BW it overlaps. Chunk c
// of device d is one part of one pipeline (`place`); DualPipe has two pipelines (one per
// direction), the others one. Plain data and arithmetic: no plan, no engine.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/pass.hpp"

namespace ipusim {

struct OrderOp {
  Pass pass = Pass::Forward;  // Forward (F), InputGradient (B), WeightGradient (W) or Backward (BW)
  std::int64_t micro = 0;
  int chunk = 0;
  // DualPipe's overlapped pair: this F and the BW after it (on an IPU they run one after the
  // other; the pair is kept for the record and for order_lines).
  bool paired_with_next = false;

  bool operator==(const OrderOp&) const = default;
};

struct PartRef {
  int pipeline = 0;
  int index = 0;  // position in its pipeline: F of index k needs F of k-1, B of k needs B of k+1
};

struct ScheduleOrder {
  std::string name;
  int devices = 0;
  int chunks = 1;                               // per device
  std::vector<std::vector<PartRef>> place;      // [device][chunk]
  int parts = 0;                                // per pipeline
  std::vector<int> pipeline_of_micro;           // which pipeline micro-batch i runs through
  std::vector<std::vector<OrderOp>> ops;        // [device]
  int weight_copies = 1;                        // DualPipe holds each device's two stages' weights
  double activation_per_chunk = 1;              // a chunk's share of one stage's activations
  bool chunk_suffix = true;                     // order_lines names chunks ("F0.1")

  const PartRef& part(int device, int chunk) const {
    return place[static_cast<std::size_t>(device)][static_cast<std::size_t>(chunk)];
  }
};

// Per-op times by device and chunk (the measured F, B, W of each part); BW costs B + W.
struct OpTimes {
  std::vector<std::vector<double>> f, b, w;  // [device][chunk]
  static OpTimes uniform(int devices, int chunks, double f, double b, double w);
  bool operator==(const OpTimes&) const = default;
};

// The order timed by list scheduling: an op starts when its device is free and what it depends
// on is done (F of part k: F of part k-1; B or BW of part k: B of part k+1, or F of the last
// part; W: B of its part), plus `hop` seconds when that dependency ran on another device.
// `ipu_of_device` (empty: each device its own) puts devices on shared processors: ops of
// devices on one IPU never overlap. Ops are placed one at a time, the one that can start
// earliest first (ties: the lower device), so `sequence` (the placement order) is a
// topological order of the ops and every IPU's ops in it are in start order: the IPU's program.
// Activation peaks follow the order (they do not depend on times): a device holds a chunk's
// activations (weight 1/chunks per micro-batch) from its F until its B (F..B) or its W (F..W).
struct OrderTiming {
  double makespan = 0;
  std::vector<double> busy_span;      // [device]: last end - first start
  std::vector<double> busy_seconds;   // [device]: time computing
  std::vector<double> peak_fb, peak_fw;  // [device]
  std::vector<std::vector<double>> start, end;  // [device][op]
  std::vector<std::pair<int, std::size_t>> sequence;  // (device, op index) in placement order
};
OrderTiming evaluate(const ScheduleOrder& order, const OpTimes& times, double hop = 0,
                     const std::vector<int>& ipu_of_device = {});
// evaluate's `sequence` alone, without recording times (the lowering needs only the order).
std::vector<std::pair<int, std::size_t>> placement_sequence(const ScheduleOrder& order, const OpTimes& times,
                                                            double hop = 0, const std::vector<int>& ipu_of_device = {});

// One line per device as schedule-orders-p4-m8.txt writes it ("F0.1 B0.1 (F3&BW5) ...").
std::vector<std::string> order_lines(const ScheduleOrder& order);

// Places shared by the generators: chunk c of device d is part c*p+d (interleaved), or parts
// d and 2p-1-d (the V), in one pipeline of p*chunks parts.
ScheduleOrder interleaved_layout(const std::string& name, int p, int v, std::int64_t m);
ScheduleOrder v_layout(const std::string& name, int p, std::int64_t m);

// The greedy generators time ops as the reference code does: in whole ticks, the longest of
// F, B, W 1000 ticks, a copy between devices at least one tick (its max(c, 1)); with a zero
// copy time, ties between a W and a neighbour's op break differently than the reference's.
double to_ticks(double seconds, double longest);
inline constexpr double kCommTicks = 1;

// The generators (one file each; rules of the reference implementations named there).
// Each throws std::invalid_argument whose text starts with a rule id and ": " (say
// pipeline.dualpipe-even) when p and m break its constraints.
ScheduleOrder order_1f1b(int p, std::int64_t m);
ScheduleOrder order_interleaved(int p, int v, std::int64_t m);
// ZB-H1 (memory limit p) and ZB-H2 (2p) from the measured F, B, W of each stage; `w_share` of
// a micro-batch's activations is what W still needs after B (the limit counts F..B in full
// and B..W at that share; the golden orders are the same for any share).
ScheduleOrder order_zb_h(int p, std::int64_t m, int memory_limit, const OpTimes& times, double w_share = 1);
ScheduleOrder order_zb_v(int p, std::int64_t m, const OpTimes& times);
// V-Half (half = true) and V-Min from their stable patterns (the reference uses unit slots).
ScheduleOrder order_v_greedy(int p, std::int64_t m, bool half);
ScheduleOrder order_dualpipe(int p, std::int64_t m);
ScheduleOrder order_dualpipev(int p, std::int64_t m);

// Where an order schedule's devices and chunks run the plan's forward stages (order_parts.cpp
// lays them out, refusing a plan that does not fit):
// - OnePerStage: one device per forward stage, one chunk; stages on one IPU share it.
// - Interleaved: v = P/p >= 2 chunks per IPU, chunk c of IPU d being stage c*p+d.
// - V: two chunks per IPU, stage j on the IPU of stage P-1-j (the middle two merged or not).
// - DualPipeMirrored: one forward stage per IPU; IPU d runs stage d and, mirrored, stage P-1-d.
enum class PartPlacement { OnePerStage, Interleaved, V, DualPipeMirrored };

// The order of p devices, v chunks per device (Interleaved takes any v >= 2, the others the v
// of their placement), m micro-batches, from the measured times (the greedy generators read
// them) and W's share of a micro-batch's activations (the ZB memory limit's rule).
using OrderGenerator = ScheduleOrder (*)(int p, int v, std::int64_t m, const OpTimes& times, double w_share);

// An order schedule as a unit: defined in its generator's file, listed by the schedule registry
// (schedule.cpp), which makes it a what-if schedule run by build_from_order.
struct OrderScheduleInfo {
  std::string name;
  std::string description;
  std::string constraints;
  PartPlacement placement = PartPlacement::OnePerStage;
  OrderGenerator generate = nullptr;
};
// The order training 1F1B runs from when stages share an IPU (interleaved_1f1b.cpp); its
// schedule entry is the asynchronous one (asynchronous.cpp).
const OrderScheduleInfo& one_f_one_b_order();

// The order of registered schedule `name` (its entry's generator), for p devices, m
// micro-batches, v chunks per device. Throws std::invalid_argument "rule: message" for a broken
// constraint or a schedule that runs from no order.
ScheduleOrder make_order(const std::string& name, int p, int v, std::int64_t m, const OpTimes& times,
                         double w_share = 1);

} // namespace ipusim
