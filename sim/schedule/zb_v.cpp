// ZB-V (Qi et al., ICLR 2024, section 6): two chunks per device in a V (device d holds parts
// d and 2p-1-d), the greedy order of sail-sg/zero-bubble-pipeline-parallelism's scheduler/zbv.py
// (PipelineGraph.try_v_schedule and create_schedule), ported rule for rule. Its memory limit is
// 2p chunks' activations per device (p stages' worth); it takes the measured F, B, W (the
// median over devices of each device's mean over its chunks, as the reference does).
#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>
#include <tuple>

#include "sim/schedule/order.hpp"

namespace ipusim {

namespace {

// Internally B and W chunk 0 is the backward of forward chunk 1 (the V's turn), as in zbv.py.
struct VGreedy {
  int S;
  std::int64_t M;
  std::array<double, 3> cost;  // F, B, W
  std::array<double, 3> mem;   // F, B, W
  double comm;
  double max_mem;

  std::size_t id(int cat, int chunk, int stage, std::int64_t micro) const {
    return static_cast<std::size_t>(((static_cast<std::int64_t>(cat) * 2 + chunk) * S + stage) * M + micro);
  }

  struct Result {
    std::vector<std::vector<std::tuple<int, int, std::int64_t>>> schedule;
    double max_bubble = 0;
    // Whether a switch decided anything on this run's way or its retries': where it did not,
    // the run with the switch flipped takes the same ways and gives the same result.
    bool fill_f_decided = false, fill_b_decided = false;
  };

  Result run(bool fill_f, bool fill_b, const std::vector<double>* approved) const;
};

// One run's state: per stage, the ops put so far by category and chunk (count: F0, F1, B0, B1,
// W0, W1), when its last op ends (cur), its activations and its bubble so far, the chunks of its
// pending W; when every op ends (-1: not yet); and in r, each stage's order.
struct VGreedyRun {
  const VGreedy& g;
  const int S;
  const std::int64_t M;
  const std::vector<double>* approved;  // a previous run's bubbles, the budget this one may use
  double max_approved = -1;
  std::vector<std::array<std::int64_t, 6>> count;
  std::vector<double> end, cur, memory, bubble;
  std::vector<std::deque<int>> pending_w;
  VGreedy::Result r;

  VGreedyRun(const VGreedy& greedy, const std::vector<double>* approved_bubble)
      : g(greedy), S(greedy.S), M(greedy.M), approved(approved_bubble),
        count(static_cast<std::size_t>(S), {0, 0, 0, 0, 0, 0}), end(static_cast<std::size_t>(6 * S * M), -1.0),
        cur(static_cast<std::size_t>(S), 0), memory(static_cast<std::size_t>(S), 0),
        bubble(static_cast<std::size_t>(S), 0), pending_w(static_cast<std::size_t>(S)) {
    r.schedule.resize(static_cast<std::size_t>(S));
    if (approved) max_approved = *std::max_element(approved->begin(), approved->end());
  }

  double max_stage_bubble(int stage) const {
    double b = *std::max_element(bubble.begin(), bubble.end());
    if (stage >= 0 && approved) b = std::max(b, max_approved - (*approved)[static_cast<std::size_t>(stage)]);
    return b;
  }

  void put(int cat, int chunk, int stage) {
    const auto I = static_cast<std::size_t>(stage);
    double tmp = cur[I] + g.cost[static_cast<std::size_t>(cat)];
    const double no_bubble = tmp;
    const std::int64_t cnt = count[I][static_cast<std::size_t>(cat * 2 + chunk)];
    if (cnt >= M) throw std::logic_error("zb-v: too many ops");
    if (cat < 2 && chunk == 1 && stage < S - 1)
      tmp = std::max(tmp, end[g.id(cat, chunk, stage + 1, cnt)] + g.comm + g.cost[static_cast<std::size_t>(cat)]);
    if (cat < 2 && chunk == 0 && stage > 0)
      tmp = std::max(tmp, end[g.id(cat, chunk, stage - 1, cnt)] + g.comm + g.cost[static_cast<std::size_t>(cat)]);
    if (count[I][0] > 0) bubble[I] += tmp - no_bubble;
    end[g.id(cat, chunk, stage, cnt)] = tmp;
    cur[I] = tmp;
    memory[I] += g.mem[static_cast<std::size_t>(cat)];
    r.schedule[I].emplace_back(cat, chunk, cnt);
    if (cat == 1) pending_w[I].push_back(chunk);
    count[I][static_cast<std::size_t>(cat * 2 + chunk)] += 1;
  }

  void put_w(int stage) {
    const int chunk = pending_w[static_cast<std::size_t>(stage)].front();
    pending_w[static_cast<std::size_t>(stage)].pop_front();
    put(2, chunk, stage);
  }

  // Pending W fill the wait for `fa` (-1: none), then one more when the wait beats the bubble
  // budget and `also` (a switch, when `decided` names it) allows it.
  void fill(int i, std::ptrdiff_t fa, bool also, bool* decided = nullptr) {
    const auto I = static_cast<std::size_t>(i);
    while (!pending_w[I].empty() && fa >= 0 && end[static_cast<std::size_t>(fa)] + g.comm >= cur[I] + g.cost[2])
      put_w(i);
    const double fa_end = fa >= 0 ? end[static_cast<std::size_t>(fa)] : end.back();  // Python's end_time[-1]
    if (!pending_w[I].empty() && fa_end + g.comm - cur[I] > max_stage_bubble(i) - bubble[I]) {
      if (decided != nullptr) *decided = true;
      if (also) put_w(i);
    }
  }

  // Micro-batch 0 down the V and back to the first stage, each stage before its turn putting the
  // chunk-0 F (of every stage up to it) that fit in memory and end before the turn reaches it.
  void warm_up() {
    for (int i = 0; i < S; ++i) put(0, 0, i);
    for (int i = S - 1; i >= 0; --i) {
      const auto I = static_cast<std::size_t>(i);
      if (i == S - 1) {
        put(0, 1, i);
        continue;
      }
      const double tmp = end[g.id(0, 1, i + 1, 0)] + g.comm;
      while (memory[I] + g.mem[0] * (2 + i * 2) <= g.max_mem && cur[I] + g.cost[0] <= tmp && count[I][0] < M)
        for (int j = 0; j <= i; ++j) put(0, 0, j);
      put(0, 1, i);
    }
  }

  // Each stage catches up with the one before it in F and gets one chunk-1 F ahead of it (chunk 1
  // flows back up the V), the stages from it on putting F of the two chunks in turn.
  void catch_up() {
    int iter_chunk = 0;
    for (int i = 1; i < S; ++i) {
      const auto I = static_cast<std::size_t>(i);
      while (count[I][0] + count[I][1] < count[I - 1][0] + count[I - 1][1] ||
             (count[I][1] <= count[I - 1][1] && count[I - 1][1] < M)) {
        for (int j = S - 1; j >= i; --j)
          if (count[static_cast<std::size_t>(j)][static_cast<std::size_t>(iter_chunk)] < M) put(0, iter_chunk, j);
        iter_chunk = 1 - iter_chunk;
      }
    }
  }

  // A B on every stage, then at most one F each; W free the memory for them and fill their waits.
  void steady_round(bool fill_f, bool fill_b) {
    for (int i = 0; i < S; ++i)
      while (memory[static_cast<std::size_t>(i)] + g.mem[1] > g.max_mem) put_w(i);
    backwards(fill_b);
    forwards(fill_f);
  }

  // A stage whose next B is chunk 1 (up the V's second half) goes first, from the last stage
  // back; the chunk-0 B follow, from the first stage on.
  std::vector<std::pair<int, int>> backward_order() const {
    std::vector<int> b0, b1;
    for (int i = 0; i < S; ++i) {
      const auto& c = count[static_cast<std::size_t>(i)];
      if (c[3] >= c[2]) b0.push_back(i);
      else if (i == S - 1) b1.push_back(i);
      else if (end[g.id(1, 1, i + 1, c[3])] >= 0 || c[2] >= M) b1.push_back(i);
      else b0.push_back(i);
    }
    std::vector<std::pair<int, int>> ranks;
    for (auto it = b1.rbegin(); it != b1.rend(); ++it) ranks.emplace_back(*it, 1);
    for (int i : b0) ranks.emplace_back(i, 0);
    return ranks;
  }

  void backwards(bool fill_b) {
    for (const auto& [i, chunk] : backward_order()) {
      const auto& c = count[static_cast<std::size_t>(i)];
      std::ptrdiff_t fa = -1;
      if (chunk == 1 && i < S - 1) fa = static_cast<std::ptrdiff_t>(g.id(1, 1, i + 1, c[3]));
      if (chunk == 0 && i > 0) fa = static_cast<std::ptrdiff_t>(g.id(1, 0, i - 1, c[2]));
      if (chunk == 1) fill(i, fa, true);
      else fill(i, fa, fill_b, &r.fill_b_decided);
      put(1, chunk, i);
    }
  }

  // The chunk of a stage's next F: 0 when its chunk 1 has caught up, else 1 if that input has
  // arrived, else 0 if that one has; -1: none.
  int next_forward(int i) const {
    const auto& c = count[static_cast<std::size_t>(i)];
    if (c[1] >= M) return -1;
    if (c[1] >= c[0]) return 0;
    if (i == S - 1) return 1;
    if (end[g.id(0, 1, i + 1, c[1])] >= 0) return 1;
    if (c[0] < M && (i == 0 || end[g.id(0, 0, i - 1, c[0])] >= 0)) return 0;
    return -1;
  }

  void forwards(bool fill_f) {
    for (int i = 0; i < S; ++i) {
      const auto I = static_cast<std::size_t>(i);
      const auto& c = count[I];
      const int item = next_forward(i);
      if (item < 0) continue;
      while (memory[I] + g.mem[0] > g.max_mem) put_w(i);
      std::ptrdiff_t fa = -1;
      if (item == 0 && i > 0) fa = static_cast<std::ptrdiff_t>(g.id(0, 0, i - 1, c[0]));
      if (item == 1 && i < S - 1) fa = static_cast<std::ptrdiff_t>(g.id(0, 1, i + 1, c[1]));
      fill(i, fa, fill_f, &r.fill_f_decided);
      put(0, item, i);
    }
  }

  void drain_w() {
    for (int i = 0; i < S; ++i)
      while (!pending_w[static_cast<std::size_t>(i)].empty()) put_w(i);
  }
};

// A first run, or one under its budget, is tried again with its own bubbles as the budget
// (zbv.py's try_v_schedule), keeping the better.
VGreedy::Result VGreedy::run(bool fill_f, bool fill_b, const std::vector<double>* approved) const {
  VGreedyRun s(*this, approved);
  s.warm_up();
  s.catch_up();
  for (std::int64_t round = 0; round < 2 * M; ++round) s.steady_round(fill_f, fill_b);
  s.drain_w();
  s.r.max_bubble = s.max_stage_bubble(-1);
  if (s.max_approved < 0 || s.r.max_bubble < s.max_approved) {
    Result again = run(fill_f, fill_b, &s.bubble);
    again.fill_f_decided = again.fill_f_decided || s.r.fill_f_decided;
    again.fill_b_decided = again.fill_b_decided || s.r.fill_b_decided;
    if (again.max_bubble < s.r.max_bubble) return again;
    s.r.fill_f_decided = again.fill_f_decided;
    s.r.fill_b_decided = again.fill_b_decided;
  }
  return std::move(s.r);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

ScheduleOrder order_zb_v(int p, std::int64_t m, const OpTimes& times) {
  ScheduleOrder o = v_layout("zb-v", p, m);
  std::array<double, 3> cost{};
  const std::vector<std::vector<double>>* rows[] = {&times.f, &times.b, &times.w};
  for (std::size_t k = 0; k < 3; ++k) {
    std::vector<double> mean;
    for (const auto& row : *rows[k]) mean.push_back((row[0] + row[1]) / 2);
    cost[k] = median(mean);
  }
  const double longest = *std::max_element(cost.begin(), cost.end());
  for (double& c : cost) c = to_ticks(c, longest);
  // Memory in chunk activations: F holds one, B frees none, W frees it (the F..W lifetime).
  VGreedy g{p, m, cost, {1.0, 0.0, -1.0}, kCommTicks, 2.0 * p};
  // The four variants in zbv.py's order, the first of equal bubbles kept; one whose flipped
  // switch decided nothing on an earlier variant's ways is that variant again and is not run.
  VGreedy::Result best;
  bool found = false;
  struct Way {
    bool fill_f_decided = true, fill_b_decided = true;
  };
  const auto run = [&](bool fill_f, bool fill_b) {
    VGreedy::Result r = g.run(fill_f, fill_b, nullptr);
    const Way way{r.fill_f_decided, r.fill_b_decided};
    if (!found || r.max_bubble < best.max_bubble) best = std::move(r), found = true;
    return way;
  };
  const Way both = run(true, true);
  const Way no_fill_f = both.fill_f_decided ? run(false, true) : both;
  const Way no_fill_b = both.fill_b_decided ? run(true, false) : both;
  if (no_fill_f.fill_b_decided && no_fill_b.fill_f_decided) run(false, false);
  for (int d = 0; d < p; ++d)
    for (const auto& [cat, chunk, micro] : best.schedule[static_cast<std::size_t>(d)])
      o.ops[static_cast<std::size_t>(d)].push_back(
          {cat == 0 ? Pass::Forward : cat == 1 ? Pass::InputGradient : Pass::WeightGradient, micro, cat == 0 ? chunk : 1 - chunk});
  return o;
}

const OrderScheduleInfo& zb_v_order() {
  static const OrderScheduleInfo info{
      "zb-v", "what-if: zero bubble ZB-V, two chunks per IPU in a V (parts d and 2p-1-d), memory p",
      "a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", PartPlacement::V,
      [](int p, int, std::int64_t m, const OpTimes& times, double) { return order_zb_v(p, m, times); }};
  return info;
}

} // namespace ipusim
