#include "sim/search/incumbents.hpp"

#include <algorithm>
#include <tuple>

namespace ipusim {

namespace {

// Larger score first; equal scores in a fixed order of their settings and split.
bool better(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  auto key = [](const Candidate& c) {
    const PlanSettings& s = c.settings;
    return std::tie(s.tensor_parallel, s.ipus, s.replicas, s.micro_batch, s.depth, s.schedule, s.recompute, s.state_off_chip, s.rts,
                    s.heads_on_last, s.weight_update, c.split.layers_per_ipu, c.amp);
  };
  return key(a) < key(b);
}

} // namespace

bool Incumbents::worth(double score_bound, double headroom_bound, std::int64_t global_batch) const {
  const double reach = score_bound / (1 + tolerance_);  // what it must beat by more than the tolerance
  if (static_cast<int>(ranked_.size()) < top_ || reach > ranked_.back().score) return true;
  if (score_bound >= (1 - within_) * best_score()) {
    bool dominated = false;
    for (const Candidate& c : front_)
      dominated = dominated || (c.score >= reach && c.least_headroom >= headroom_bound - kHeadroomTolerance);
    if (!dominated) return true;
  }
  if (batch_free_) {
    for (const auto& [batch, c] : by_batch_) {
      if (batch > global_batch) break;
      if (c.score >= reach) return false;
    }
    return true;
  }
  return false;
}

void Incumbents::seed(const Candidate& c) {
  add(c);
  seeds_.push_back(c);
}

void Incumbents::add(const Candidate& c) {
  for (const Candidate& s : seeds_)
    if (&s != &c && s.settings.ipus == c.settings.ipus && s.settings.replicas == c.settings.replicas &&
        s.settings.tensor_parallel == c.settings.tensor_parallel &&
        s.settings.micro_batch == c.settings.micro_batch && s.settings.depth == c.settings.depth &&
        s.settings.schedule == c.settings.schedule && s.settings.recompute == c.settings.recompute &&
        s.settings.state_off_chip == c.settings.state_off_chip && s.settings.rts == c.settings.rts &&
        s.settings.heads_on_last == c.settings.heads_on_last && s.settings.weight_update == c.settings.weight_update &&
        s.split.layers_per_ipu == c.split.layers_per_ipu && s.split.units_per_layer == c.split.units_per_layer)
      return;
  ranked_.insert(std::upper_bound(ranked_.begin(), ranked_.end(), c, better), c);
  if (static_cast<int>(ranked_.size()) > top_) ranked_.pop_back();
  const double floor = (1 - within_) * best_score();
  bool dominated = false;
  for (const Candidate& f : front_) dominated = dominated || (f.score >= c.score && f.least_headroom >= c.least_headroom);
  if (!dominated && c.score >= floor) {
    front_.erase(std::remove_if(front_.begin(), front_.end(),
                                [&](const Candidate& f) { return c.score >= f.score && c.least_headroom >= f.least_headroom; }),
                 front_.end());
    front_.insert(std::upper_bound(front_.begin(), front_.end(), c, better), c);
  }
  front_.erase(std::remove_if(front_.begin(), front_.end(), [&](const Candidate& f) { return f.score < floor; }), front_.end());
  if (batch_free_) {
    auto [it, added] = by_batch_.try_emplace(c.global_batch, c);
    if (!added && better(c, it->second)) it->second = c;
  }
}

std::vector<Candidate> Incumbents::batch_front() const {
  std::vector<Candidate> out;
  for (const auto& [batch, c] : by_batch_)
    if (out.empty() || c.score > out.back().score) out.push_back(c);
  return out;
}

} // namespace ipusim
