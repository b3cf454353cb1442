#pragma once
// What the search has found so far, and so what a part of the space must be able to beat to
// be worth examining: the top K by score, the front of score against least headroom among
// candidates within `within` of the best, and (when the global batch is free) the best at
// each global batch. A part is pruned only when its upper bound on the score (and on the
// headroom) cannot enter any of them by more than the tolerance: a relative `tolerance` in
// score, and kHeadroomTolerance bytes per tile in headroom (without one, configurations that
// differ only in the availableMemoryProportion of an IPU that paces nothing, a few parts per
// million apart in throughput, would each displace the last and never be pruned).
#include <cstdint>
#include <map>
#include <vector>

#include "sim/search/planner.hpp"

namespace ipusim {

class Incumbents {
public:
  static constexpr double kHeadroomTolerance = 1024;
  Incumbents(int top, double within, bool batch_free, double tolerance)
      : top_(top), within_(within), batch_free_(batch_free), tolerance_(tolerance) {}

  bool worth(double score_bound, double headroom_bound, std::int64_t global_batch) const;
  void add(const Candidate& c);
  // A candidate found before (a coarser search's answer, already polished): added, and the same
  // configuration found again with another availableMemoryProportion is then not added twice.
  void seed(const Candidate& c);
  double best_score() const { return ranked_.empty() ? 0 : ranked_.front().score; }
  const Candidate* best() const { return ranked_.empty() ? nullptr : &ranked_.front(); }
  std::vector<Candidate> ranked() const { return ranked_; }
  std::vector<Candidate> front() const { return front_; }
  std::vector<Candidate> batch_front() const;

private:
  int top_;
  double within_;
  bool batch_free_;
  double tolerance_;
  std::vector<Candidate> ranked_, front_, seeds_;
  std::map<std::int64_t, Candidate> by_batch_;
};

} // namespace ipusim
