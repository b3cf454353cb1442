#pragma once
// Walks the steps a compact Program runs, in order, with each step's micro-batch,
// without expanding its repeats: what the engine executes and what tests count.
#include <cstdint>
#include <vector>

#include "sim/schedule/program.hpp"

namespace ipusim {

class ProgramCursor {
public:
  struct Frame {
    std::size_t repeat = 0;  // index into Program::repeats
    std::int64_t iteration = 0;
    bool operator==(const Frame&) const = default;
  };

  // Throws std::logic_error when the repeats are not properly nested ranges listed outer
  // before inner, or run fewer than once: a schedule bug, not bad input.
  explicit ProgramCursor(const Program& program);

  bool done() const { return index_ >= program_->steps.size(); }
  std::size_t index() const { return index_; }
  const Step& step() const { return program_->steps[index_]; }
  // The current step's micro-batch: its template value plus the iterations of its loops, or -1.
  std::int64_t micro_batch() const { return step().micro_batch >= 0 ? step().micro_batch + offset_ : -1; }
  // The micro-batch shift the enclosing loops add at this point.
  std::int64_t offset() const { return offset_; }
  void advance();

  // The loops the current step is in, outermost first.
  const std::vector<Frame>& frames() const { return frames_; }
  // frames()[d] for d >= first_new_frame() began an iteration at the current step.
  std::size_t first_new_frame() const { return first_new_; }
  const Repeat& repeat_of(std::size_t depth) const { return program_->repeats[frames_[depth].repeat]; }
  // Moves the loop at `depth` on by `iterations` without running them (steady-state
  // acceleration); it must stay inside the loop.
  void skip_iterations(std::size_t depth, std::int64_t iterations);

private:
  // Enters the repeats that begin at the current step, from `first_repeat` on.
  void enter(std::size_t first_repeat);

  const Program* program_;
  std::size_t index_ = 0;
  std::int64_t offset_ = 0;
  std::vector<Frame> frames_;
  std::size_t first_new_ = 0;
  std::vector<std::size_t> first_repeat_at_;  // per step: the first repeat beginning there, or repeats.size()
};

// How many steps the program runs, its repeats expanded.
std::int64_t executed_steps(const Program& program);
// How many transfers its steps list, repeats expanded (a transfer appears in the programs
// of both its IPUs when they exchange it).
std::int64_t executed_transfers(const Program& program);

// The most a micro-batch the program runs falls below the largest it ran before it:
// once it has run micro-batch b it never again runs one below b - label_lag. With this
// bound metrics close a micro-batch's latency span as soon as no program can touch it.
// 0 for programs without micro-batches. Needs strides >= 0 (every schedule's).
std::int64_t label_lag(const Program& program);

} // namespace ipusim
