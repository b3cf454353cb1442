#include "sim/metrics/attribution.hpp"

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

TimeAttribution::TimeAttribution(const Schedule& schedule, Mode mode, bool record_idle_slices)
    : state_(std::make_unique<State>(schedule, mode, record_idle_slices)) {}
TimeAttribution::~TimeAttribution() = default;
void TimeAttribution::on_event(const Event& event) { state_->on_event(event); }
void TimeAttribution::on_transfer(const TransferRecord& transfer) { state_->on_transfer(transfer); }
bool TimeAttribution::wants_transfers() const { return state_->wants_transfers(); }
Attribution TimeAttribution::finish(double end_time) { return state_->finish(end_time); }
bool TimeAttribution::can_add_periods() const { return state_->can_add_periods(); }
void TimeAttribution::begin_marks() { state_->begin_marks(); }
void TimeAttribution::mark() { state_->mark(); }
bool TimeAttribution::periodic(const RepeatedPeriods& r, std::int64_t periods) const {
  return state_->periodic(r, periods);
}
void TimeAttribution::add_periods(const RepeatedPeriods& r, std::int64_t periods) { state_->add_periods(r, periods); }
void TimeAttribution::end_marks() { state_->end_marks(); }

} // namespace ipusim
