#include "sim/schedule/order.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace ipusim {

OpTimes OpTimes::uniform(int devices, int chunks, double f, double b, double w) {
  OpTimes t;
  const auto row = [&](double x) { return std::vector<double>(static_cast<std::size_t>(chunks), x); };
  t.f.assign(static_cast<std::size_t>(devices), row(f));
  t.b.assign(static_cast<std::size_t>(devices), row(b));
  t.w.assign(static_cast<std::size_t>(devices), row(w));
  return t;
}

double to_ticks(double seconds, double longest) {
  return longest > 0 ? std::max(1.0, std::round(seconds * 1000 / longest)) : 1.0;
}

namespace {

// End times of every (pipeline, part, micro-batch, F/B/W), -1 until done.
class Done {
public:
  Done(const ScheduleOrder& o) : parts_(o.parts), micros_(static_cast<std::int64_t>(o.pipeline_of_micro.size())) {
    int pipelines = 0;
    for (const auto& row : o.place)
      for (const PartRef& r : row) pipelines = std::max(pipelines, r.pipeline + 1);
    end_.assign(static_cast<std::size_t>(pipelines * parts_ * micros_ * 3), -1.0);
    device_.assign(static_cast<std::size_t>(pipelines * parts_), -1);
    for (int d = 0; d < o.devices; ++d)
      for (int c = 0; c < o.chunks; ++c) device_[index(o.part(d, c))] = d;
  }
  double& at(PartRef r, std::int64_t micro, int kind) {
    return end_[static_cast<std::size_t>(((index(r)) * micros_ + micro) * 3 + kind)];
  }
  int device_of(PartRef r) const { return device_[index(r)]; }

private:
  std::size_t index(PartRef r) const { return static_cast<std::size_t>(r.pipeline * parts_ + r.index); }
  int parts_;
  std::int64_t micros_;
  std::vector<double> end_;
  std::vector<int> device_;
};

// The list scheduling itself: `place(device, op index, start, seconds)` for each op, in
// placement order; throws when an op's dependency is never done.
template <class OnPlace>
void place_ops(const ScheduleOrder& o, const OpTimes& times, double hop, const std::vector<int>& ipu_of_device,
               OnPlace&& place) {
  Done done(o);
  const auto D = static_cast<std::size_t>(o.devices);
  std::vector<std::size_t> next(D, 0);
  std::vector<int> ipu(D);
  for (std::size_t d = 0; d < D; ++d) ipu[d] = ipu_of_device.empty() ? static_cast<int>(d) : ipu_of_device[d];
  std::vector<double> free(static_cast<std::size_t>(*std::max_element(ipu.begin(), ipu.end()) + 1), 0);
  // When op `op` of device d may start: -1 while a dependency is not done.
  auto ready = [&](int d, const OrderOp& op) {
    const PartRef r = o.part(d, op.chunk);
    PartRef dep = r;
    int kind = 0;
    if (op.pass == Pass::Forward) {
      if (r.index == 0) return 0.0;
      dep.index -= 1;
    } else if (op.pass == Pass::WeightGradient) {
      kind = 1;
    } else if (r.index + 1 < o.parts) {
      dep.index += 1;
      kind = 1;
    }
    const double e = done.at(dep, op.micro, kind);
    if (e < 0) return -1.0;
    return e + (done.device_of(dep) == d ? 0.0 : hop);
  };
  auto cost = [&](int d, const OrderOp& op) {
    const auto c = static_cast<std::size_t>(op.chunk), dd = static_cast<std::size_t>(d);
    switch (op.pass) {
    case Pass::Forward: return times.f[dd][c];
    case Pass::InputGradient: return times.b[dd][c];
    case Pass::WeightGradient: return times.w[dd][c];
    case Pass::Backward: return times.b[dd][c] + times.w[dd][c];
    case Pass::None:
    case Pass::Update:
    case Pass::AllReduce: break;  // no order op
    }
    return 0.0;
  };
  auto finish = [&](int d, const OrderOp& op, double end) {
    const PartRef r = o.part(d, op.chunk);
    if (op.pass == Pass::Forward) done.at(r, op.micro, 0) = end;
    if (op.pass == Pass::InputGradient || op.pass == Pass::Backward) done.at(r, op.micro, 1) = end;
    if (op.pass == Pass::WeightGradient || op.pass == Pass::Backward) done.at(r, op.micro, 2) = end;
  };
  // Each device's next op, with the time it can start (-1: waiting for a dependency); an op
  // is placed at the earliest start among them. DualPipe's pairs run F then BW: an IPU's
  // tiles compute one op at a time (on a GPU the pair overlaps one chunk's communication
  // with the other's compute). After a placement, a device's candidate can change only if it
  // is the placed op's device, shares its IPU (whose free time moved) or was waiting (the
  // placed op may be what it waited for): a ready op's dependency end is final.
  std::vector<double> candidate(D, -1);
  auto refresh = [&](std::size_t d) {
    candidate[d] = -1;
    if (next[d] >= o.ops[d].size()) return;
    const double at = ready(static_cast<int>(d), o.ops[d][next[d]]);
    if (at >= 0) candidate[d] = std::max(at, free[static_cast<std::size_t>(ipu[d])]);
  };
  for (std::size_t d = 0; d < D; ++d) refresh(d);
  for (;;) {
    std::size_t best = D;
    for (std::size_t d = 0; d < D; ++d)
      if (candidate[d] >= 0 && (best == D || candidate[d] < candidate[best])) best = d;
    if (best == D) break;
    const OrderOp& op = o.ops[best][next[best]];
    const double start = candidate[best], seconds = cost(static_cast<int>(best), op);
    place(best, next[best], start, seconds);
    finish(static_cast<int>(best), op, start + seconds);
    free[static_cast<std::size_t>(ipu[best])] = start + seconds;
    ++next[best];
    for (std::size_t d = 0; d < D; ++d)
      if (d == best || ipu[d] == ipu[best] || candidate[d] < 0) refresh(d);
  }
  for (std::size_t d = 0; d < D; ++d)
    if (next[d] < o.ops[d].size())
      throw std::logic_error(o.name + ": device " + std::to_string(d) + " waits forever at op " +
                             std::to_string(next[d]) + " (the order breaks a dependency)");
}

} // namespace

std::vector<std::pair<int, std::size_t>> placement_sequence(const ScheduleOrder& o, const OpTimes& times, double hop,
                                                            const std::vector<int>& ipu_of_device) {
  std::vector<std::pair<int, std::size_t>> sequence;
  std::size_t total_ops = 0;
  for (const auto& ops : o.ops) total_ops += ops.size();
  sequence.reserve(total_ops);
  place_ops(o, times, hop, ipu_of_device, [&](std::size_t d, std::size_t i, double, double) {
    sequence.emplace_back(static_cast<int>(d), i);
  });
  return sequence;
}

OrderTiming evaluate(const ScheduleOrder& o, const OpTimes& times, double hop, const std::vector<int>& ipu_of_device) {
  const auto D = static_cast<std::size_t>(o.devices);
  OrderTiming t;
  t.start.resize(D);
  t.end.resize(D);
  t.busy_seconds.assign(D, 0);
  place_ops(o, times, hop, ipu_of_device, [&](std::size_t d, std::size_t i, double start, double seconds) {
    t.start[d].push_back(start);
    t.end[d].push_back(start + seconds);
    t.sequence.emplace_back(static_cast<int>(d), i);
    t.busy_seconds[d] += seconds;
  });
  t.busy_span.assign(D, 0);
  for (std::size_t d = 0; d < D; ++d) {
    if (!t.end[d].empty()) t.busy_span[d] = t.end[d].back() - t.start[d].front();
    t.makespan = std::max(t.makespan, t.end[d].empty() ? 0.0 : t.end[d].back());
  }
  t.peak_fb.assign(D, 0);
  t.peak_fw.assign(D, 0);
  for (std::size_t d = 0; d < D; ++d) {
    double fb = 0, fw = 0;
    for (const OrderOp& op : o.ops[d]) {
      const double a = o.activation_per_chunk;
      if (op.pass == Pass::Forward) fb += a, fw += a;
      if (op.pass == Pass::InputGradient || op.pass == Pass::Backward) fb -= a;
      if (op.pass == Pass::WeightGradient || op.pass == Pass::Backward) fw -= a;
      t.peak_fb[d] = std::max(t.peak_fb[d], fb);
      t.peak_fw[d] = std::max(t.peak_fw[d], fw);
    }
  }
  return t;
}

std::vector<std::string> order_lines(const ScheduleOrder& o) {
  std::vector<std::string> out;
  for (const auto& ops : o.ops) {
    std::ostringstream line;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto name = [&](const OrderOp& op) {
        std::string s = pass_letter(op.pass) + std::to_string(op.micro);
        if (o.chunk_suffix) s += "." + std::to_string(op.chunk);
        return s;
      };
      if (i) line << ' ';
      if (ops[i].paired_with_next && i + 1 < ops.size()) {
        line << '(' << name(ops[i]) << '&' << name(ops[i + 1]) << ')';
        ++i;
      } else {
        line << name(ops[i]);
      }
    }
    out.push_back(line.str());
  }
  return out;
}

namespace {
ScheduleOrder layout(const std::string& name, int p, int v, std::int64_t m) {
  ScheduleOrder o;
  o.name = name;
  o.devices = p;
  o.chunks = v;
  o.parts = p * v;
  o.place.assign(static_cast<std::size_t>(p), std::vector<PartRef>(static_cast<std::size_t>(v)));
  o.pipeline_of_micro.assign(static_cast<std::size_t>(m), 0);
  o.ops.resize(static_cast<std::size_t>(p));
  o.activation_per_chunk = 1.0 / v;
  o.chunk_suffix = v > 1;
  return o;
}
} // namespace

ScheduleOrder interleaved_layout(const std::string& name, int p, int v, std::int64_t m) {
  ScheduleOrder o = layout(name, p, v, m);
  for (int d = 0; d < p; ++d)
    for (int c = 0; c < v; ++c) o.place[static_cast<std::size_t>(d)][static_cast<std::size_t>(c)] = {0, c * p + d};
  return o;
}

ScheduleOrder v_layout(const std::string& name, int p, std::int64_t m) {
  ScheduleOrder o = layout(name, p, 2, m);
  for (int d = 0; d < p; ++d) o.place[static_cast<std::size_t>(d)] = {{0, d}, {0, 2 * p - 1 - d}};
  return o;
}

} // namespace ipusim
