// ZB-H1 and ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the greedy
// order of sail-sg/zero-bubble-pipeline-parallelism's scheduler/zb.py (Graph.manual_order and
// initial_solution), ported rule for rule. Stage j puts forwards while its activations (one
// per F, B releasing what W does not need, W the rest) stay under the limit (p for ZB-H1, 2p for ZB-H2), fills
// waits for its neighbour with pending W, and keeps the best of the eight variants of its three
// switches by the longest stage span. It takes the measured F, B, W of each stage.
#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>

#include "sim/schedule/order.hpp"

namespace ipusim {

namespace {

struct Greedy {
  int S;
  std::int64_t M;
  std::vector<std::array<double, 3>> cost;  // [stage] F, B, W
  double limit;
  double comm;

  std::size_t id(int type, int stage, std::int64_t mb) const {
    return static_cast<std::size_t>((static_cast<std::int64_t>(type) * S + stage) * M + mb);
  }
  double cost_of(int type, int stage) const { return cost[static_cast<std::size_t>(stage)][static_cast<std::size_t>(type)]; }
  double w_share = 1;  // of a micro-batch's activations, what W still needs after B
  double mem_of(int type) const { return type == 0 ? 1.0 : type == 1 ? w_share - 1 : -w_share; }

  struct Result {
    std::vector<double> t;  // completion time of every node
    // Per stage, the type of each op in the order it was put, which is its order of
    // completion: every op costs at least one tick, so a stage's ends strictly increase.
    std::vector<std::vector<std::uint8_t>> put_types;
    double best_time = 0;
    bool ok = true;
    // Whether a switch decided anything on this run's way: where it did not, the run with
    // the switch flipped takes the same way and gives the same result.
    bool prioritize_b_decided = false, no_bubble_greedy_decided = false;
  };

  Result run(bool allow_bubble_before_first_b, bool prioritize_b, bool no_bubble_greedy) const;
  // Whether the first switch changes the forwards the warm-up puts (the only place it acts).
  bool bubble_before_first_b_decides() const;
};

// One run's state: per stage, the F, B and W put so far (f, b, w), the activations it holds (m),
// when its last op ends (e) and its bubble so far; and in r, when every node completes.
struct GreedyRun {
  const Greedy& g;
  const int S;
  const std::int64_t M;
  const bool no_bubble_greedy;
  std::vector<std::int64_t> f, b, w;
  std::vector<double> m, e, stage_bubble;
  Greedy::Result r;

  GreedyRun(const Greedy& greedy, bool greedy_fill)
      : g(greedy), S(greedy.S), M(greedy.M), no_bubble_greedy(greedy_fill), f(static_cast<std::size_t>(S), 0),
        b(static_cast<std::size_t>(S), 0), w(static_cast<std::size_t>(S), 0), m(static_cast<std::size_t>(S), 0),
        e(static_cast<std::size_t>(S), 0), stage_bubble(static_cast<std::size_t>(S), 0) {
    r.t.assign(static_cast<std::size_t>(3 * S * M), 0);
    r.put_types.resize(static_cast<std::size_t>(S));
    for (auto& types : r.put_types) types.reserve(static_cast<std::size_t>(3 * M));
  }

  double done(int type, int stage, std::int64_t mb) const { return r.t[g.id(type, stage, mb)]; }
  double max_bubble() const { return *std::max_element(stage_bubble.begin(), stage_bubble.end()); }

  void put(int j, int type) {
    const auto J = static_cast<std::size_t>(j);
    const std::int64_t i = type == 0 ? f[J] : type == 1 ? b[J] : w[J];
    const double c = g.cost_of(type, j);
    double tmp = e[J] + c;
    const double no_bubble = tmp;
    if (j > 0 && type == 0) tmp = std::max(tmp, done(0, j - 1, i) + g.comm + c);
    if (j < S - 1 && type == 1) tmp = std::max(tmp, done(1, j + 1, i) + g.comm + c);
    if (f[J] > 0) stage_bubble[J] += tmp - no_bubble;
    e[J] = tmp;
    r.t[g.id(type, j, i)] = tmp;
    r.put_types[J].push_back(static_cast<std::uint8_t>(type));
    m[J] += g.mem_of(type);
    (type == 0 ? f : type == 1 ? b : w)[J] += 1;
  }

  // Pending W fill the wait for `ready` (the neighbour's F or B); a gap W cannot fill is
  // filled anyway when it beats the worst stage's bubble so far (no_bubble_greedy).
  void fill(int j, double ready) {
    const auto J = static_cast<std::size_t>(j);
    while (w[J] < b[J] && e[J] + g.cost_of(2, j) <= ready + g.comm) put(j, 2);
    if (w[J] < b[J] && e[J] < ready + g.comm) {
      if (ready + g.comm - e[J] <= max_bubble() - stage_bubble[J]) {
        r.no_bubble_greedy_decided = true;
        if (no_bubble_greedy) put(j, 2);
      } else {
        put(j, 2);
      }
    }
  }

  // Before its op of `mem` activations, a stage frees memory with its pending W; false when
  // it runs out of them (this variant cannot keep to the limit).
  bool make_room(int j, double mem) {
    const auto J = static_cast<std::size_t>(j);
    while (m[J] + mem > g.limit) {
      if (w[J] >= b[J]) return false;
      put(j, 2);
    }
    return true;
  }

  // Micro-batch 0 goes down and back up the pipeline, each stage putting the extra F that fit
  // before its B can start.
  void warm_up(bool allow_bubble_before_first_b) {
    for (int j = 0; j < S; ++j) put(j, 0);
    const std::vector<std::int64_t> need = warm_up_forwards(allow_bubble_before_first_b);
    for (int j = 0; j < S; ++j)
      for (std::int64_t k = 0; k < need[static_cast<std::size_t>(j)]; ++k) put(j, 0);
    for (int j = S - 1; j >= 0; --j) put(j, 1);
  }

  // From the last stage up: the F that fit in memory before micro-batch 0's B reaches each stage
  // (allowing a bubble: that end by then); then, as zb.py trims them, fewer on each stage than
  // on the one before it unless they are all its micro-batches.
  std::vector<std::int64_t> warm_up_forwards(bool allow_bubble_before_first_b) const {
    std::vector<std::int64_t> need(static_cast<std::size_t>(S), 0);
    double last_t = 0;
    for (int j = S - 1; j >= 0; --j) {
      const auto J = static_cast<std::size_t>(j);
      if (j == S - 1) {
        last_t = done(0, j, 0) + g.cost_of(1, j);
        continue;
      }
      double mem = m[J], c = e[J];
      while (f[J] + need[J] < M && mem + g.mem_of(0) <= g.limit) {
        if (allow_bubble_before_first_b ? c + g.cost_of(0, j) > last_t + g.comm : c >= last_t + g.comm) break;
        mem += g.mem_of(0);
        c += g.cost_of(0, j);
        need[J] += 1;
      }
      last_t = std::max(c, last_t + g.comm) + g.cost_of(1, j);
    }
    for (int j = 1; j < S; ++j) {
      const auto J = static_cast<std::size_t>(j);
      while (need[J] > 0 && need[J] >= need[J - 1] && f[J] + need[J] < M) need[J] -= 1;
    }
    return need;
  }

  // A stage puts its next F only when every later stage does too, so that no stage gets
  // further ahead of the ones after it.
  std::vector<int> stages_to_forward(bool prioritize_b) {
    std::vector<int> need(static_cast<std::size_t>(S), 0);
    for (int j = 0; j < S; ++j) need[static_cast<std::size_t>(j)] = wants_forward(j, prioritize_b) ? 1 : 0;
    for (int j = S - 2; j >= 0; --j) {
      const auto J = static_cast<std::size_t>(j);
      need[J] = std::min(need[J], need[J + 1]);
    }
    return need;
  }

  // Prioritizing B, a stage two F ahead of the next one holds its F back when it (with the W
  // that make room for it) would delay the next stage's F and B, unless the wait beats the
  // worst stage's bubble so far.
  bool wants_forward(int j, bool prioritize_b) {
    const auto J = static_cast<std::size_t>(j);
    if (f[J] >= M) return false;
    if (j + 1 < S && f[J] >= f[J + 1] + 2 && prioritize_b) {
      const double next_plus_fw = e[J + 1] + g.cost_of(0, j + 1) + g.cost_of(1, j + 1) + g.comm;
      if (e[J] >= next_plus_fw) return held_back();
      double w_cost = 0, mem_with_w = m[J] + g.mem_of(0);
      std::int64_t w_cnt = 0;
      while (mem_with_w > g.limit && w[J] + w_cnt < b[J]) {
        w_cost += g.cost_of(2, j);
        mem_with_w += g.mem_of(2);
        ++w_cnt;
      }
      if (e[J] + g.cost_of(0, j) + w_cost <= next_plus_fw) return true;
      if (next_plus_fw - e[J] <= max_bubble() - stage_bubble[J]) return held_back();
    }
    return true;
  }

  bool held_back() {
    r.prioritize_b_decided = true;
    return false;
  }

  // Down the pipeline, W filling the wait for the previous stage's F; false when memory runs out.
  bool forwards(const std::vector<int>& need) {
    for (int j = 0; j < S; ++j) {
      const auto J = static_cast<std::size_t>(j);
      if (!need[J]) continue;
      if (!make_room(j, g.mem_of(0))) return false;
      if (j > 0) fill(j, done(0, j - 1, f[J]));
      put(j, 0);
    }
    return true;
  }

  // Micro-batch i's B up the pipeline, W filling the wait for the next stage's B (and the
  // first stage, its forwards done, clearing its W first); false when memory runs out.
  bool backwards(std::int64_t i) {
    for (int j = S - 1; j >= 0; --j) {
      const auto J = static_cast<std::size_t>(j);
      if (!make_room(j, g.mem_of(1))) return false;
      if (j + 1 < S) fill(j, done(1, j + 1, i));
      if (j == 0 && f[J] == M)
        while (w[J] < b[J]) put(j, 2);
      put(j, 1);
    }
    return true;
  }

  void drain_w() {
    for (int j = 0; j < S; ++j)
      while (w[static_cast<std::size_t>(j)] < M) put(j, 2);
  }

  // The variants are ranked by their longest stage span, first F to last W.
  double longest_span() const {
    double best = 0;
    for (int j = 0; j < S; ++j) best = std::max(best, done(2, j, M - 1) - done(0, j, 0) + g.cost_of(0, j));
    return best;
  }
};

bool Greedy::bubble_before_first_b_decides() const {
  GreedyRun s(*this, true);
  for (int j = 0; j < S; ++j) s.put(j, 0);
  return s.warm_up_forwards(true) != s.warm_up_forwards(false);
}

Greedy::Result Greedy::run(bool allow_bubble_before_first_b, bool prioritize_b, bool no_bubble_greedy) const {
  GreedyRun s(*this, no_bubble_greedy);
  s.warm_up(allow_bubble_before_first_b);
  for (std::int64_t i = 1; i < M; ++i) {
    if (!s.forwards(s.stages_to_forward(prioritize_b)) || !s.backwards(i)) {
      s.r.ok = false;
      return std::move(s.r);
    }
  }
  s.drain_w();
  s.r.best_time = s.longest_span();
  return std::move(s.r);
}

} // namespace

ScheduleOrder order_zb_h(int p, std::int64_t m, int memory_limit, const OpTimes& times, double w_share) {
  const std::string name = memory_limit <= p ? "zb-h1" : "zb-h2";
  ScheduleOrder o = interleaved_layout(name, p, 1, m);
  Greedy g{p, m, {}, static_cast<double>(memory_limit), kCommTicks};
  g.w_share = w_share;
  double longest = 0;
  for (int s = 0; s < p; ++s) {
    const auto S = static_cast<std::size_t>(s);
    longest = std::max({longest, times.f[S][0], times.b[S][0], times.w[S][0]});
  }
  for (int s = 0; s < p; ++s) {
    const auto S = static_cast<std::size_t>(s);
    g.cost.push_back({to_ticks(times.f[S][0], longest), to_ticks(times.b[S][0], longest),
                      to_ticks(times.w[S][0], longest)});
  }
  // The eight variants in zb.py's order, the first of equal times kept. A variant whose
  // flipped switch decided nothing on an earlier variant's way takes that way again (same
  // result: it cannot be strictly better), so it is not run.
  Greedy::Result best;
  bool found = false;
  struct Way {
    bool prioritize_decided = true, greedy_decided = true;
  };
  const auto run = [&](bool allow, bool prioritize, bool greedy) {
    Greedy::Result r = g.run(allow, prioritize, greedy);
    const Way way{r.prioritize_b_decided, r.no_bubble_greedy_decided};
    if (r.ok && (!found || r.best_time < best.best_time)) best = std::move(r), found = true;
    return way;
  };
  const bool allow_decides = g.bubble_before_first_b_decides();
  for (bool allow : {true, false}) {
    if (!allow && !allow_decides) break;
    const Way tt = run(allow, true, true);
    const Way tf = tt.greedy_decided ? run(allow, true, false) : tt;
    const Way ft = tt.prioritize_decided ? run(allow, false, true) : tt;
    if (tf.prioritize_decided && ft.greedy_decided) run(allow, false, false);
  }
  if (!found)
    throw std::invalid_argument("pipeline.zb-memory: no " + name + " order fits its memory limit of " +
                                std::to_string(memory_limit) + " micro-batches");
  // Each stage's ops in order of completion (zb.py sorts every node by its end time, stable
  // on ties). An op the greedy put ends after a tick at least, in the order it was put (the
  // k-th of a type is micro-batch k's); one it never put (a short run can leave forwards out)
  // keeps the end time 0 and so comes first, in F, B, W and micro-batch order.
  const Pass passes[] = {Pass::Forward, Pass::InputGradient, Pass::WeightGradient};  // the greedy's types 0, 1, 2
  for (int s = 0; s < p; ++s) {
    const auto S = static_cast<std::size_t>(s);
    std::vector<OrderOp>& ops = o.ops[S];
    ops.reserve(static_cast<std::size_t>(3 * m));
    std::array<std::int64_t, 3> put{};
    for (const std::uint8_t type : best.put_types[S]) ++put[type];
    for (std::size_t type = 0; type < 3; ++type)
      for (std::int64_t i = put[type]; i < m; ++i) ops.push_back({passes[type], i, 0});
    std::array<std::int64_t, 3> next_micro{};
    for (const std::uint8_t type : best.put_types[S]) ops.push_back({passes[type], next_micro[type]++, 0});
  }
  return o;
}

// Both run on any placement: one part per forward stage, stages on one IPU sharing it.
const OrderScheduleInfo& zb_h1_order() {
  static const OrderScheduleInfo info{
      "zb-h1", "what-if: zero bubble ZB-H1, backward split into B and W, greedy order under 1F1B's memory (p)",
      "any placement: one part per forward stage, stages on one IPU share it", PartPlacement::OnePerStage,
      [](int p, int, std::int64_t m, const OpTimes& times, double w_share) {
        return order_zb_h(p, m, p, times, w_share);
      }};
  return info;
}

const OrderScheduleInfo& zb_h2_order() {
  static const OrderScheduleInfo info{
      "zb-h2", "what-if: zero bubble ZB-H2, greedy order under twice 1F1B's memory (2p micro-batches)",
      "any placement: one part per forward stage, stages on one IPU share it", PartPlacement::OnePerStage,
      [](int p, int, std::int64_t m, const OpTimes& times, double w_share) {
        return order_zb_h(p, m, 2 * p, times, w_share);
      }};
  return info;
}

} // namespace ipusim
