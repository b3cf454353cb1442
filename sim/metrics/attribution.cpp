#include "sim/metrics/attribution.hpp"

#include <stdexcept>

#include "sim/metrics/attribution_state.hpp"

namespace ipusim {

class TimeAttribution::State : public attribution_detail::StateImpl {
public:
  using StateImpl::StateImpl;
};

const char* idle_cause_name(IdleCause cause) {
  switch (cause) {
  case IdleCause::FillFlush: return "fill-flush";
  case IdleCause::Imbalance: return "imbalance";
  case IdleCause::CopyWait: return "copy-wait";
  case IdleCause::UpdateWait: return "update-wait";
  case IdleCause::TurnWait: return "turn-wait";
  }
  return "imbalance";
}

namespace {

// Whether an asynchronous receive takes a copy: only then are the transfers needed (their senders' starts).
bool receives_copies(const Schedule& schedule) {
  for (const Program& program : schedule.programs)
    for (const Step& step : program.steps)
      if (step.kind == StepKind::Receive && !step.transfers.empty()) return true;
  return false;
}

} // namespace

TimeAttribution::TimeAttribution(const Schedule& schedule, Mode mode, bool record_idle_slices)
    : schedule_(schedule), mode_(mode), record_idle_slices_(record_idle_slices),
      wants_transfers_(receives_copies(schedule)) {
  mirrors_.programs_per_unit = schedule.programs.size();
}
TimeAttribution::~TimeAttribution() = default;

TimeAttribution::State& TimeAttribution::state() {
  if (!state_) state_ = std::make_unique<State>(schedule_, mirrors_.programs_per_unit, mode_, record_idle_slices_);
  return *state_;
}

void TimeAttribution::on_mirrors(const MirroredUnits& units) {
  if (state_) throw std::logic_error("the attribution was told of mirrored units after its first event");
  mirrors_ = units;
}

void TimeAttribution::on_event(const Event& event) { state().on_event(event); }
void TimeAttribution::on_transfer(const TransferRecord& transfer) { state().on_transfer(transfer); }
bool TimeAttribution::wants_transfers() const { return wants_transfers_; }

// A mirror's attribution is its source's (program p + k * programs_per_unit runs as p).
Attribution TimeAttribution::finish(double end_time) {
  Attribution out = state().finish(end_time);
  const std::size_t sources = out.ipus.size();
  for (std::size_t k = 1; k < mirrors_.units; ++k)
    for (std::size_t p = 0; p < sources; ++p) {
      IpuAttribution mirror = out.ipus[p];
      mirror.ipu += static_cast<int>(k) * mirrors_.ipus_per_unit;
      out.ipus.push_back(mirror);
    }
  return out;
}

bool TimeAttribution::can_add_periods() const { return !record_idle_slices_; }
void TimeAttribution::begin_marks() { state().begin_marks(); }
void TimeAttribution::mark() { state().mark(); }
bool TimeAttribution::periodic(const RepeatedPeriods& r, std::int64_t periods) const {
  return state_->periodic(r, periods);  // marked first (begin_marks), so built
}
void TimeAttribution::add_periods(const RepeatedPeriods& r, std::int64_t periods) { state().add_periods(r, periods); }
void TimeAttribution::end_marks() { state().end_marks(); }

} // namespace ipusim
