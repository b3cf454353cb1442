#include "sim/schedule/program_cursor.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace ipusim {

namespace {

void check_repeats(const Program& p) {
  std::vector<const Repeat*> open;
  for (std::size_t i = 0; i < p.repeats.size(); ++i) {
    const Repeat& r = p.repeats[i];
    const auto bad = [&](const std::string& why) {
      throw std::logic_error("program of IPU " + std::to_string(p.ipu) + ": repeat " + std::to_string(i) + " " + why);
    };
    if (r.times < 1 || r.length == 0 || r.stride < 0) bad("runs no step or has a negative stride");
    if (r.first + r.length > p.steps.size()) bad("ends past the last step");
    while (!open.empty() && open.back()->first + open.back()->length <= r.first) open.pop_back();
    if (!open.empty() && (r.first + r.length > open.back()->first + open.back()->length ||
                          (r.first == open.back()->first && r.length > open.back()->length)))
      bad("overlaps another without nesting in it");
    if (i > 0 && r.first < p.repeats[i - 1].first) bad("is listed out of order");
    open.push_back(&r);
  }
}

} // namespace

ProgramCursor::ProgramCursor(const Program& program)
    : program_(&program), first_repeat_at_(program.steps.size() + 1, program.repeats.size()) {
  check_repeats(program);
  for (std::size_t r = program.repeats.size(); r-- > 0;) first_repeat_at_[program.repeats[r].first] = r;
  enter(first_repeat_at_[0]);
  first_new_ = 0;
}

void ProgramCursor::enter(std::size_t first_repeat) {
  const auto& repeats = program_->repeats;
  for (std::size_t r = first_repeat; r < repeats.size() && repeats[r].first == index_; ++r) frames_.push_back({r, 0});
}

void ProgramCursor::advance() {
  ++index_;
  first_new_ = frames_.size();
  const auto& repeats = program_->repeats;
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    const Repeat& r = repeats[f.repeat];
    if (index_ < r.first + r.length) break;
    if (f.iteration + 1 < r.times) {
      ++f.iteration;
      offset_ += r.stride;
      index_ = r.first;
      first_new_ = frames_.size() - 1;
      enter(f.repeat + 1);
      return;
    }
    offset_ -= r.stride * f.iteration;
    frames_.pop_back();
    first_new_ = std::min(first_new_, frames_.size());
  }
  if (index_ < program_->steps.size()) {
    const std::size_t before = frames_.size();
    enter(first_repeat_at_[index_]);
    first_new_ = std::min(first_new_, before);
  }
}

void ProgramCursor::skip_iterations(std::size_t depth, std::int64_t iterations) {
  Frame& f = frames_.at(depth);
  const Repeat& r = program_->repeats[f.repeat];
  if (iterations < 0 || f.iteration + iterations >= r.times)
    throw std::logic_error("skipping past the end of a repeat of IPU " + std::to_string(program_->ipu));
  f.iteration += iterations;
  offset_ += r.stride * iterations;
}

namespace {

// How many times each template step runs.
std::vector<std::int64_t> multiplicities(const Program& program) {
  std::vector<std::int64_t> multiplicity(program.steps.size(), 1);
  for (const Repeat& r : program.repeats)
    for (std::size_t i = r.first; i < r.first + r.length && i < multiplicity.size(); ++i) multiplicity[i] *= r.times;
  return multiplicity;
}

} // namespace

std::int64_t executed_steps(const Program& program) {
  std::int64_t total = 0;
  for (std::int64_t m : multiplicities(program)) total += m;
  return total;
}

std::int64_t executed_transfers(const Program& program) {
  const std::vector<std::int64_t> multiplicity = multiplicities(program);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < multiplicity.size(); ++i)
    total += multiplicity[i] * static_cast<std::int64_t>(program.steps[i].transfers.size());
  return total;
}

namespace {

struct LagWalk {
  const Program& program;
  std::int64_t max_seen = std::numeric_limits<std::int64_t>::min();
  std::int64_t lag = 0;

  // Template steps [begin, end) at micro-batch offset `offset`; `next` is the first repeat
  // not yet entered. A loop's iterations past the second repeat the second's pattern one
  // stride higher (strides are >= 0), so iterations 0, 1, n-2 and n-1 give the same
  // largest lag and leave the same largest micro-batch as all n.
  void walk(std::size_t begin, std::size_t end, std::size_t& next, std::int64_t offset) {
    const auto& repeats = program.repeats;
    for (std::size_t i = begin; i < end;) {
      if (next < repeats.size() && repeats[next].first == i) {
        const Repeat& r = repeats[next];
        std::size_t after = next + 1;
        std::vector<std::int64_t> iterations{0, 1, r.times - 2, r.times - 1};
        iterations.erase(std::remove_if(iterations.begin(), iterations.end(),
                                        [&](std::int64_t it) { return it < 0 || it >= r.times; }),
                         iterations.end());
        std::sort(iterations.begin(), iterations.end());
        iterations.erase(std::unique(iterations.begin(), iterations.end()), iterations.end());
        for (std::int64_t it : iterations) {
          std::size_t inner = next + 1;
          walk(r.first, r.first + r.length, inner, offset + it * r.stride);
          after = inner;
        }
        next = after;
        i = r.first + r.length;
        continue;
      }
      const std::int64_t mb = program.steps[i].micro_batch;
      if (mb >= 0) {
        const std::int64_t label = mb + offset;
        if (max_seen != std::numeric_limits<std::int64_t>::min()) lag = std::max(lag, max_seen - label);
        max_seen = std::max(max_seen, label);
      }
      ++i;
    }
  }
};

} // namespace

std::int64_t label_lag(const Program& program) {
  check_repeats(program);
  LagWalk w{program};
  std::size_t next = 0;
  w.walk(0, program.steps.size(), next, 0);
  return w.lag;
}

} // namespace ipusim
