// The order schedules by name: what each is, the constraints it refuses, and its generator.
#include <stdexcept>

#include "sim/schedule/order.hpp"

namespace ipusim {

const std::vector<OrderScheduleInfo>& order_schedules() {
  static const std::vector<OrderScheduleInfo> registry{
      {"interleaved-1f1b",
       "what-if: Megatron's interleaved 1F1B, v model chunks per IPU (chunk c of IPU d is part c*p+d)",
       "G a multiple of the IPUs p in the pipeline; v >= 2 forward stages per IPU, stage c*p+d on IPU d (the model's annotations)", 0},
      {"zb-h1", "what-if: zero bubble ZB-H1, backward split into B and W, greedy order under 1F1B's memory (p)",
       "any placement: one part per forward stage, stages on one IPU share it", 1},
      {"zb-h2", "what-if: zero bubble ZB-H2, greedy order under twice 1F1B's memory (2p micro-batches)",
       "any placement: one part per forward stage, stages on one IPU share it", 1},
      {"zb-v", "what-if: zero bubble ZB-V, two chunks per IPU in a V (parts d and 2p-1-d), memory p", "a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", 2},
      {"v-half", "what-if: V-Half (controllable memory), V placement, about half of 1F1B's activations", "a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", 2},
      {"v-min", "what-if: V-Min (controllable memory), V placement, about a third of 1F1B's activations", "a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", 2},
      {"dualpipe",
       "what-if: DeepSeek DualPipe, half the micro-batches from each end, each IPU holds stages d and p-1-d "
       "(two copies of the weights)",
       "p even; G even and >= 2p; one forward stage per IPU (heads last): IPU d also runs stage p-1-d, over "
       "mirrored copies, and the two weight copies' gradients are summed before the update", 2},
      {"dualpipev", "what-if: DualPipeV, DualPipe folded onto a V (one copy of the weights)", "G >= 2p; a V: stage j on the IPU of stage 2p-1-j (the middle two merged or not)", 2},
  };
  return registry;
}

ScheduleOrder make_order(const std::string& name, int p, int v, std::int64_t m, const OpTimes& times,
                         double w_share) {
  if (name == "1f1b") return order_1f1b(p, m);
  if (name == "interleaved-1f1b") return order_interleaved(p, v, m);
  if (name == "zb-h1") return order_zb_h(p, m, p, times, w_share);
  if (name == "zb-h2") return order_zb_h(p, m, 2 * p, times, w_share);
  if (name == "zb-v") return order_zb_v(p, m, times);
  if (name == "v-half") return order_v_greedy(p, m, true);
  if (name == "v-min") return order_v_greedy(p, m, false);
  if (name == "dualpipe") return order_dualpipe(p, m);
  if (name == "dualpipev") return order_dualpipev(p, m);
  throw std::invalid_argument("scenario.unknown-schedule: no order schedule \"" + name + "\"");
}

} // namespace ipusim
