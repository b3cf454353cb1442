// DualPipe and DualPipeV (DeepSeek-V3 technical report): the orders deepseek-ai/DualPipe's
// dualpipe.py and dualpipev.py step() run, replayed with counters instead of tensors. DualPipe
// feeds half the micro-batches from each end: device d holds stage d of the forward direction
// and stage p-1-d of the reverse one (two copies of the weights in all). DualPipeV folds the
// same order onto a V (chunk 0 of device d is part d, chunk 1 part 2p-1-d), one copy of the
// weights. In the main steps an F of one chunk and a BW of the other run as one overlapped
// pair; B with zero bubble enabled leaves its W in a FIFO that later W steps pop.
#include <deque>
#include <stdexcept>

#include "sim/schedule/order.hpp"

namespace ipusim {

namespace {

// Emits one device's ops as the reference's step() calls them. `v`: DualPipeV's numbering.
class Replay {
public:
  Replay(std::vector<OrderOp>& ops, bool flip, std::int64_t half, bool v) : ops_(ops), flip_(flip), half_(half), v_(v) {}

  void forward(int phase) { ops_.push_back(f(phase)); }
  void backward(int phase, bool zero_bubble) {
    OrderOp op = b(phase, zero_bubble);
    if (zero_bubble) queue_.push_back(op);
    ops_.push_back(op);
  }
  void pair(int phase0, int phase1) {
    OrderOp first = f(phase0);
    first.paired_with_next = true;
    ops_.push_back(first);
    ops_.push_back(b(phase1, false));
  }
  void weight() {
    if (queue_.empty()) throw std::logic_error("dualpipe: W with no pending B");
    OrderOp op = queue_.front();
    queue_.pop_front();
    op.pass = Pass::WeightGradient;
    ops_.push_back(op);
  }
  bool drained() const { return queue_.empty(); }

private:
  // A phase of the reference is a chunk of this device; DualPipe's second half of the devices
  // swaps them (phase ^= is_in_second_half), and numbers the reverse direction's micro-batches
  // after the forward direction's.
  OrderOp op(Pass pass, int phase, std::int64_t& counter) {
    const int chunk = phase ^ (flip_ ? 1 : 0);
    const std::int64_t id = counter++;
    return {pass, v_ || chunk == 0 ? id : half_ + id, chunk};
  }
  OrderOp f(int phase) { return op(Pass::Forward, phase, next_f_[phase ^ (flip_ ? 1 : 0)]); }
  OrderOp b(int phase, bool zero_bubble) {
    return op(zero_bubble ? Pass::InputGradient : Pass::Backward, phase, next_b_[phase ^ (flip_ ? 1 : 0)]);
  }

  std::vector<OrderOp>& ops_;
  bool flip_;
  std::int64_t half_;
  bool v_;
  std::int64_t next_f_[2] = {0, 0}, next_b_[2] = {0, 0};
  std::deque<OrderOp> queue_;
};

// The eight steps of step(): `ranks` and `rank` are DualPipe's half ranks (num_half_ranks,
// half_rank) or DualPipeV's ranks; `chunks` its micro-batches per chunk; `middle` the device
// that does not overlap its first main-step pair.
void steps(Replay& r, int ranks, int rank, std::int64_t chunks, bool middle) {
  for (int i = 0; i < (ranks - rank - 1) * 2; ++i) r.forward(0);
  for (int i = 0; i < rank + 1; ++i) r.forward(0), r.forward(1);
  for (int i = 0; i < ranks - rank - 1; ++i) {
    r.backward(1, true);
    r.weight();
    r.forward(1);
  }
  const std::int64_t main = chunks - 2 * ranks + rank + 1;
  for (std::int64_t i = 0; i < main; ++i) {
    if (i == 0 && middle) {
      r.forward(0);
      r.backward(1, false);
    } else {
      r.pair(0, 1);
    }
    r.pair(1, 0);
  }
  for (int i = 0; i < ranks - rank - 1; ++i) {
    r.backward(1, false);
    r.pair(1, 0);
  }
  bool zero_bubble = false;
  const int last = rank + 1;
  for (int i = 0; i < last; ++i) {
    if (i == last / 2 && rank % 2 == 1) zero_bubble = true;
    r.backward(1, zero_bubble);
    if (i == last / 2 && rank % 2 == 0) zero_bubble = true;
    r.backward(0, zero_bubble);
  }
  for (int i = 0; i < ranks - rank - 1; ++i) {
    r.weight();
    r.backward(0, true);
  }
  for (int i = 0; i < rank + 1; ++i) r.weight();
  if (!r.drained()) throw std::logic_error("dualpipe: W left pending");
}

} // namespace

ScheduleOrder order_dualpipe(int p, std::int64_t m) {
  if (p % 2 != 0)
    throw std::invalid_argument("pipeline.dualpipe-even: DualPipe needs an even number of IPUs in the pipeline, not " +
                                std::to_string(p));
  if (m % 2 != 0 || m < 2 * p)
    throw std::invalid_argument("pipeline.dualpipe-depth: DualPipe needs an even number of micro-batches of at least "
                                "twice the pipeline depth (" + std::to_string(2 * p) + "), not " + std::to_string(m));
  ScheduleOrder o;
  o.name = "dualpipe";
  o.devices = p;
  o.chunks = 2;
  o.parts = p;
  o.weight_copies = 2;
  o.activation_per_chunk = 1;  // each chunk is a whole stage
  o.chunk_suffix = false;
  o.ops.resize(static_cast<std::size_t>(p));
  for (int d = 0; d < p; ++d) o.place.push_back({{0, d}, {1, p - 1 - d}});
  for (std::int64_t i = 0; i < m; ++i) o.pipeline_of_micro.push_back(i < m / 2 ? 0 : 1);
  for (int d = 0; d < p; ++d) {
    Replay r(o.ops[static_cast<std::size_t>(d)], d >= p / 2, m / 2, false);
    steps(r, p / 2, std::min(d, p - 1 - d), m / 2, d == p / 2 - 1 || d == p / 2);
  }
  return o;
}

ScheduleOrder order_dualpipev(int p, std::int64_t m) {
  if (m < 2 * p)
    throw std::invalid_argument("pipeline.dualpipe-depth: DualPipeV needs at least twice as many micro-batches as "
                                "IPUs in the pipeline (" + std::to_string(2 * p) + "), not " + std::to_string(m));
  ScheduleOrder o = v_layout("dualpipev", p, m);
  for (int d = 0; d < p; ++d) {
    Replay r(o.ops[static_cast<std::size_t>(d)], false, 0, true);
    steps(r, p, d, m, d == p - 1);
  }
  return o;
}

const OrderScheduleInfo& dualpipe_order() {
  static const OrderScheduleInfo info{
      "dualpipe",
      "what-if: DeepSeek DualPipe, half the micro-batches from each end, each IPU holds stages d and p-1-d "
      "(two copies of the weights)",
      "p even; G even and >= 2p; one forward stage per IPU (heads last): IPU d also runs stage p-1-d, over "
      "mirrored copies, and the two weight copies' gradients are summed before the update",
      PartPlacement::DualPipeMirrored,
      [](int p, int, std::int64_t m, const OpTimes&, double) { return order_dualpipe(p, m); }};
  return info;
}

const OrderScheduleInfo& dualpipev_order() {
  static const OrderScheduleInfo info{
      "dualpipev", "what-if: DualPipeV, DualPipe folded onto a V (one copy of the weights)",
      "G >= 2p; a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", PartPlacement::V,
      [](int p, int, std::int64_t m, const OpTimes&, double) { return order_dualpipev(p, m); }};
  return info;
}

} // namespace ipusim
