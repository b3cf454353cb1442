// Order schedules by name, through the registry (schedule.cpp): each is a unit defined in its
// generator's file, so nothing here lists them.
#include <stdexcept>

#include "sim/schedule/order.hpp"
#include "sim/schedule/schedule.hpp"

namespace ipusim {

ScheduleOrder make_order(const std::string& name, int p, int v, std::int64_t m, const OpTimes& times,
                         double w_share) {
  const ScheduleInfo* schedule = find_schedule(name);
  if (schedule == nullptr || schedule->order == nullptr)
    throw std::invalid_argument("scenario.unknown-schedule: no order schedule \"" + name + "\"");
  return schedule->order->generate(p, v, m, times, w_share);
}

} // namespace ipusim
