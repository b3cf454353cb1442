// ZB-H1 and ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the greedy
// order of sail-sg/zero-bubble-pipeline-parallelism's scheduler/zb.py (Graph.manual_order and
// initial_solution), ported rule for rule. Stage j puts forwards while its activations (one
// per F, B releasing what W does not need, W the rest) stay under the limit (p for ZB-H1, 2p for ZB-H2), fills
// waits for its neighbour with pending W, and keeps the best of the eight variants of its three
// switches by the longest stage span. It takes the measured F, B, W of each stage.
#include <algorithm>
#include <array>
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
    double best_time = 0;
    bool ok = true;
  };

  Result run(bool allow_bubble_before_first_b, bool prioritize_b, bool no_bubble_greedy) const {
    const auto Sz = static_cast<std::size_t>(S);
    std::vector<std::int64_t> f(Sz, 0), b(Sz, 0), w(Sz, 0);
    std::vector<double> m(Sz, 0), e(Sz, 0), stage_bubble(Sz, 0);
    Result r;
    r.t.assign(static_cast<std::size_t>(3 * S * M), 0);
    auto& t = r.t;
    auto max_bubble = [&] { return *std::max_element(stage_bubble.begin(), stage_bubble.end()); };
    auto put = [&](int j, int type) {
      const auto J = static_cast<std::size_t>(j);
      const std::int64_t i = type == 0 ? f[J] : type == 1 ? b[J] : w[J];
      const double c = cost_of(type, j);
      double tmp = e[J] + c;
      const double no_bubble = tmp;
      if (j > 0 && type == 0) tmp = std::max(tmp, t[id(0, j - 1, i)] + comm + c);
      if (j < S - 1 && type == 1) tmp = std::max(tmp, t[id(1, j + 1, i)] + comm + c);
      if (f[J] > 0) stage_bubble[J] += tmp - no_bubble;
      e[J] = tmp;
      t[id(type, j, i)] = tmp;
      m[J] += mem_of(type);
      (type == 0 ? f : type == 1 ? b : w)[J] += 1;
    };
    // Pending W fill the wait for `ready` (the neighbour's F or B); a gap W cannot fill is
    // filled anyway when it beats the worst stage's bubble so far (no_bubble_greedy).
    auto fill = [&](int j, double ready) {
      const auto J = static_cast<std::size_t>(j);
      while (w[J] < b[J] && e[J] + cost_of(2, j) <= ready + comm) put(j, 2);
      if (w[J] < b[J] && e[J] < ready + comm) {
        if (ready + comm - e[J] <= max_bubble() - stage_bubble[J]) {
          if (no_bubble_greedy) put(j, 2);
        } else {
          put(j, 2);
        }
      }
    };
    for (std::int64_t i = 0; i < M; ++i) {
      if (i == 0) {
        for (int j = 0; j < S; ++j) put(j, 0);
        std::vector<std::int64_t> need(Sz, 0);
        double last_t = 0;
        for (int j = S - 1; j >= 0; --j) {
          const auto J = static_cast<std::size_t>(j);
          if (j == S - 1) {
            last_t = t[id(0, j, i)] + cost_of(1, j);
            continue;
          }
          double mem = m[J], c = e[J];
          while (f[J] + need[J] < M && mem + mem_of(0) <= limit) {
            if (allow_bubble_before_first_b ? c + cost_of(0, j) > last_t + comm : c >= last_t + comm) break;
            mem += mem_of(0);
            c += cost_of(0, j);
            need[J] += 1;
          }
          last_t = std::max(c, last_t + comm) + cost_of(1, j);
        }
        for (int j = 1; j < S; ++j) {
          const auto J = static_cast<std::size_t>(j);
          while (need[J] > 0 && need[J] >= need[J - 1] && f[J] + need[J] < M) need[J] -= 1;
        }
        for (int j = 0; j < S; ++j)
          for (std::int64_t k = 0; k < need[static_cast<std::size_t>(j)]; ++k) put(j, 0);
        for (int j = S - 1; j >= 0; --j) put(j, 1);
        continue;
      }
      std::vector<int> need(Sz, 0);
      for (int j = 0; j < S; ++j) {
        const auto J = static_cast<std::size_t>(j);
        if (f[J] >= M) continue;
        if (j + 1 < S && f[J] >= f[J + 1] + 2 && prioritize_b) {
          const double next_plus_fw = e[J + 1] + cost_of(0, j + 1) + cost_of(1, j + 1) + comm;
          if (e[J] >= next_plus_fw) continue;
          double w_cost = 0, mem_with_w = m[J] + mem_of(0);
          std::int64_t w_cnt = 0;
          while (mem_with_w > limit && w[J] + w_cnt < b[J]) {
            w_cost += cost_of(2, j);
            mem_with_w += mem_of(2);
            ++w_cnt;
          }
          if (e[J] + cost_of(0, j) + w_cost <= next_plus_fw) {
            need[J] = 1;
            continue;
          }
          if (next_plus_fw - e[J] <= max_bubble() - stage_bubble[J]) continue;
        }
        need[J] = 1;
      }
      for (int j = S - 2; j >= 0; --j)
        need[static_cast<std::size_t>(j)] = std::min(need[static_cast<std::size_t>(j)], need[static_cast<std::size_t>(j) + 1]);
      for (int j = 0; j < S; ++j) {
        const auto J = static_cast<std::size_t>(j);
        if (!need[J]) continue;
        while (m[J] + mem_of(0) > limit) {
          if (w[J] >= b[J]) return r.ok = false, r;
          put(j, 2);
        }
        if (j > 0) fill(j, t[id(0, j - 1, f[J])]);
        put(j, 0);
      }
      for (int j = S - 1; j >= 0; --j) {
        const auto J = static_cast<std::size_t>(j);
        while (m[J] + mem_of(1) > limit) {
          if (w[J] >= b[J]) return r.ok = false, r;
          put(j, 2);
        }
        if (j + 1 < S) fill(j, t[id(1, j + 1, i)]);
        if (j == 0 && f[J] == M)
          while (w[J] < b[J]) put(j, 2);
        put(j, 1);
      }
    }
    for (int j = 0; j < S; ++j)
      while (w[static_cast<std::size_t>(j)] < M) put(j, 2);
    for (int j = 0; j < S; ++j)
      r.best_time = std::max(r.best_time, t[id(2, j, M - 1)] - t[id(0, j, 0)] + cost_of(0, j));
    return r;
  }
};

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
  Greedy::Result best;
  bool found = false;
  for (bool allow : {true, false})
    for (bool prioritize : {true, false})
      for (bool greedy : {true, false}) {
        Greedy::Result r = g.run(allow, prioritize, greedy);
        if (r.ok && (!found || r.best_time < best.best_time)) best = std::move(r), found = true;
      }
  if (!found)
    throw std::invalid_argument("pipeline.zb-memory: no " + name + " order fits its memory limit of " +
                                std::to_string(memory_limit) + " micro-batches");
  // Each stage's ops in order of completion (stable: F, B, W, then micro-batch, on ties).
  for (int s = 0; s < p; ++s) {
    std::vector<OrderOp> ops;
    for (OpKind k : {OpKind::F, OpKind::B, OpKind::W})
      for (std::int64_t i = 0; i < m; ++i) ops.push_back({k, i, 0});
    std::stable_sort(ops.begin(), ops.end(), [&](const OrderOp& a, const OrderOp& b) {
      return best.t[g.id(static_cast<int>(a.kind), s, a.micro)] < best.t[g.id(static_cast<int>(b.kind), s, b.micro)];
    });
    o.ops[static_cast<std::size_t>(s)] = std::move(ops);
  }
  return o;
}

} // namespace ipusim
