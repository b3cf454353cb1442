#include "sim/search/split_costs.hpp"

#include <algorithm>
#include <set>
#include <string>

namespace ipusim {

namespace {

// The graph's producers, consumers and topological order do not depend on the placement:
// build them once from the model with every op on IPU 0.
ModelGraph unplaced_graph(const Model& model) {
  Model m = model;
  for (Op& op : m.ops) op.virtual_graph = 0, op.pipeline_stage = 0;
  return build_graph(m);
}

void add_weight(std::vector<std::pair<int, double>>& shapes, int shape, double elements) {
  for (auto& [s, e] : shapes)
    if (s == shape) return void(e += elements);
  shapes.emplace_back(shape, elements);
}

} // namespace

SplitCosts::SplitCosts(const Scenario& sc, const LayerStructure& layers, int ipus) : scenario_(sc), ipus_(ipus) {
  const Model& m = sc.model;
  const Execution& ex = sc.execution;
  const IpuSpec& spec = sc.hardware.ipu;
  const ModelGraph g = unplaced_graph(m);
  units_ = static_cast<int>(layers.names.size()) + 2;
  for (int u : layers.unit_of_op) unit_of_op_.push_back(u + 1);
  topological_order_ = g.topological_order;

  std::map<std::string, int> id;
  std::map<std::vector<std::int64_t>, int> shape_id;
  for (const auto& [name, t] : m.tensors) {
    id.emplace(name, static_cast<int>(tensors_.size()));
    TensorInfo info;
    info.kind = t.kind;
    info.dtype = t.dtype;
    info.bytes = t.kind == TensorKind::Weight ? static_cast<double>(t.bytes()) : t.bytes_per_micro_batch(ex.micro_batch_size);
    info.tile = tile0_share(info.bytes, dtype_bytes(t.dtype), spec);
    if (auto p = g.producer.find(name); p != g.producer.end()) info.producer = static_cast<int>(p->second);
    if (auto c = g.consumers.find(name); c != g.consumers.end())
      for (auto u : c->second) info.consumers.push_back(static_cast<int>(u));
    tensors_.push_back(std::move(info));
  }
  for (const TensorInfo& t : tensors_)
    for (int c : t.consumers)
      if (t.producer >= 0 && unit_of(static_cast<std::size_t>(t.producer)) > unit_of(static_cast<std::size_t>(c)))
        usable_ = false;

  std::map<std::string, int> signature_id;
  const TensorFacts facts = tensor_facts(m);
  for (int ipu = 0; ipu < ipus; ++ipu) {
    cost_models_.push_back(make_cost_model(ex.cost_model, spec, cost_options(sc, ipu)));
    if (!cost_models_.back()) usable_ = false;  // the full plan reports the unknown cost model
  }
  forward_cost_.assign(static_cast<std::size_t>(ipus), std::vector<OpCost>(m.ops.size()));
  backward_cost_ = forward_cost_;
  for (const Op& op : m.ops) {
    std::vector<int> in, out;
    for (const auto& t : op.inputs) in.push_back(id.at(t));
    for (const auto& t : op.outputs) out.push_back(id.at(t));
    op_inputs_.push_back(std::move(in));
    op_outputs_.push_back(std::move(out));
    op_reads_.push_back(backward_reads(op.type));
    op_signature_.push_back(signature_id.emplace(code_signature(m, op), static_cast<int>(signature_id.size())).first->second);
    op_tiles_.push_back(tiles_used(forward_work(m, op, ex.micro_batch_size), spec));
    if (!usable_) continue;
    OpWork forward = forward_work(m, op, ex.micro_batch_size, facts);
    forward.training = ex.training;
    OpWork backward;
    if (ex.training) {
      backward = backward_work(m, op, ex.micro_batch_size, facts);
      backward.training = true;
      backward.accumulates_weight_gradients = ex.gradient_accumulation > 1;
    }
    for (std::size_t ipu = 0; ipu < cost_models_.size(); ++ipu) {
      forward_cost_[ipu][op.index] = cost_models_[ipu]->cost(forward);
      if (ex.training) backward_cost_[ipu][op.index] = cost_models_[ipu]->cost(backward);
    }
  }
  for (const auto& a : g.anchors) anchors_.push_back(id.at(a));

  unit_weights_.resize(static_cast<std::size_t>(units_));
  completing_ = unit_weights_;
  const double shards = ex.replicated_tensor_sharding ? static_cast<double>(ex.replicas) : 1.0;
  const int state_tensors = optimizer_state_tensors(ex.optimizer);
  for (const auto& [name, users] : g.consumers) {
    const Tensor& t = m.tensor(name);
    const int tid = id.at(name);
    std::vector<int> units;
    for (auto u : users) units.push_back(unit_of(u));
    std::sort(units.begin(), units.end());
    units.erase(std::unique(units.begin(), units.end()), units.end());
    if (t.kind != TensorKind::Activation && units.size() > 1) shared_by_units_.push_back(units);
    if (t.kind != TensorKind::Weight) {
      const int from = t.kind == TensorKind::Input ? units.front() : unit_of(static_cast<std::size_t>(tensors_[tid].producer));
      if (units.size() > 1 || units.front() != from) crossing_.push_back(tid);
      continue;
    }
    const auto elements = static_cast<double>(t.elements());
    for (UnitWeights* w : {&unit_weights_[unit_of(users.front())], &completing_[units.front()]}) {
      w->elements += elements;
      w->bytes += static_cast<double>(t.bytes());
      w->count += 1;
      if (w->first < 0) w->first = tid;
    }
    UnitWeights& w = unit_weights_[unit_of(users.front())];
    w.tile += tensors_[tid].tile;
    add_weight(w.shapes, shape_id.emplace(t.shape, static_cast<int>(shape_id.size())).first->second, elements);
    if (ex.training && !ex.optimizer_state_off_chip && state_tensors > 0) {
      const double state =
          static_cast<double>(state_tensors * t.elements() * dtype_bytes(ex.optimizer_state_dtype)) / shards;
      for (int i = 0; i < state_tensors; ++i) {
        w.state_bytes += state / state_tensors;
        w.state_tile += tile0_share(state / state_tensors, dtype_bytes(ex.optimizer_state_dtype), spec);
      }
    }
  }
}

const SplitCosts::Block& SplitCosts::block(int first, int last) const {
  auto [it, added] = blocks_.try_emplace({first, last});
  Block& b = it->second;
  if (!added) return b;
  auto inside = [&](int op) { return first <= unit_of(static_cast<std::size_t>(op)) && unit_of(static_cast<std::size_t>(op)) <= last; };
  std::vector<std::size_t> ops;
  for (std::size_t op : topological_order_)
    if (inside(static_cast<int>(op))) ops.push_back(op);

  // Host streams, as make_plan assigns them: an input at its first reader's stage, an anchor at its producer's.
  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    const TensorInfo& info = tensors_[t];
    if (info.kind != TensorKind::Input || info.consumers.empty()) continue;
    int earliest = units_;
    for (int c : info.consumers) earliest = std::min(earliest, unit_of(static_cast<std::size_t>(c)));
    if (earliest < first || earliest > last) continue;
    b.host_input_bytes += info.bytes;
    b.host_buffer_bytes += info.bytes, b.host_buffer_tile += info.tile;
  }
  for (int t : anchors_) {
    const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
    if (info.producer < 0 || !inside(info.producer)) continue;
    b.host_output_bytes += info.bytes;
    b.host_buffer_bytes += info.bytes, b.host_buffer_tile += info.tile;
  }

  // describe_activations and estimate_memory's per-stage parts, on tensor ids (ids are in name order).
  std::set<int> read, entering, weights;
  for (std::size_t op : ops) {
    for (int t : op_inputs_[op]) {
      const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
      if (info.kind == TensorKind::Weight) {
        weights.insert(t);
        continue;
      }
      if (info.producer < 0 || !inside(info.producer)) entering.insert(t);
      if (op_reads_[op] == BackwardReads::Inputs) read.insert(t);
    }
    if (op_reads_[op] == BackwardReads::Outputs) read.insert(op_outputs_[op].begin(), op_outputs_[op].end());
  }
  for (int w : weights) b.weights_read_bytes += tensors_[static_cast<std::size_t>(w)].bytes;
  for (int t : read) b.stash_bytes += tensors_[static_cast<std::size_t>(t)].bytes, b.stash_tile += tensors_[static_cast<std::size_t>(t)].tile;
  double live = 0;
  for (int t : entering) live += tensors_[static_cast<std::size_t>(t)].bytes;
  std::map<int, std::size_t> last_use;
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (int t : op_inputs_[ops[i]]) last_use[t] = i;
  double peak = live;
  std::vector<std::vector<int>> dies(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (int t : op_outputs_[ops[i]]) {
      const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
      live += info.bytes;
      bool leaves = info.consumers.empty();
      for (int c : info.consumers) leaves = leaves || !inside(c);
      auto lu = last_use.find(t);
      if (!leaves && lu != last_use.end()) dies[lu->second].push_back(t);
    }
    peak = std::max(peak, live);
    for (int t : dies[i]) live -= tensors_[static_cast<std::size_t>(t)].bytes;
  }
  b.live_bytes = peak;
  std::set<int> outlined;
  for (std::size_t op : ops)
    if (outlined.insert(op_signature_[op]).second) b.code.emplace_back(op_signature_[op], op_tiles_[op]);
  b.stash_read.assign(read.begin(), read.end());
  b.entering.assign(entering.begin(), entering.end());
  return b;
}

const SplitCosts::BlockCost& SplitCosts::block_cost(int first, int last, int ipu) const {
  auto [it, added] = block_costs_.try_emplace({first, last, ipu});
  BlockCost& c = it->second;
  if (!added) return c;
  const double clock = scenario_.hardware.ipu.clock_hz;
  const bool training = scenario_.execution.training;
  for (std::size_t op : topological_order_) {
    if (unit_of(op) < first || unit_of(op) > last) continue;
    const OpCost& fc = forward_cost_[static_cast<std::size_t>(ipu)][op];
    c.forward_seconds += fc.cycles() / clock;
    c.temp_bytes_per_tile = std::max(c.temp_bytes_per_tile, fc.temp_bytes_per_tile);
    if (!training) continue;
    const OpCost& bc = backward_cost_[static_cast<std::size_t>(ipu)][op];
    c.backward_seconds += bc.cycles() / clock;
    c.temp_bytes_per_tile = std::max(c.temp_bytes_per_tile, bc.temp_bytes_per_tile);
  }
  return c;
}

// Under recomputation the stash holds the tensors entering the stage and those it sends to
// another IPU that its backward reads (make_plan's recompute_stash_tensors); `other_*` is the
// other stage on the same IPU, if any (-1).
std::pair<double, double> SplitCosts::recompute_stash(int first, int last, int other_first, int other_last) const {
  auto [it, added] = recompute_stashes_.try_emplace({first, last, other_first, other_last});
  if (!added) return it->second;
  const Block& b = block(first, last);
  auto here = [&](int op, int lo, int hi) { return lo <= unit_of(static_cast<std::size_t>(op)) && unit_of(static_cast<std::size_t>(op)) <= hi; };
  std::set<int> stash(b.entering.begin(), b.entering.end());
  for (int t : b.stash_read) {
    const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
    if (info.producer < 0 || !here(info.producer, first, last)) continue;
    for (int c : info.consumers)
      if (!here(c, first, last) && !here(c, other_first, other_last)) stash.insert(t);
  }
  for (int t : stash) it->second.first += tensors_[static_cast<std::size_t>(t)].bytes, it->second.second += tensors_[static_cast<std::size_t>(t)].tile;
  return it->second;
}

bool SplitCosts::refused(const std::vector<int>& layers_per_ipu, bool heads_on_last) const {
  if (ipus_ > scenario_.hardware.ipu_count) return true;
  std::vector<int> ipu_of_unit(static_cast<std::size_t>(units_), 0);
  const auto blocks = stage_units(layers_per_ipu, heads_on_last);
  for (std::size_t s = 0; s < blocks.size() / 2; ++s)
    for (int u = blocks[2 * s]; u <= blocks[2 * s + 1]; ++u) ipu_of_unit[static_cast<std::size_t>(u)] = s < static_cast<std::size_t>(ipus_) ? static_cast<int>(s) : 0;
  for (const auto& units : shared_by_units_)
    for (int u : units)
      if (ipu_of_unit[static_cast<std::size_t>(u)] != ipu_of_unit[static_cast<std::size_t>(units.front())]) return true;
  return false;
}

// First and last unit of each forward stage, flattened: the stem and the first block on IPU 0,
// block i on IPU i, the heads with the last block or in a final stage back on IPU 0.
std::vector<int> SplitCosts::stage_units(const std::vector<int>& layers_per_ipu, bool heads_on_last) const {
  std::vector<int> out;
  int next = 1;
  for (std::size_t i = 0; i < layers_per_ipu.size(); ++i) {
    out.push_back(i == 0 ? 0 : next);
    next += layers_per_ipu[i];
    out.push_back(i + 1 == layers_per_ipu.size() && heads_on_last ? units_ - 1 : next - 1);
  }
  if (!heads_on_last) out.push_back(units_ - 1), out.push_back(units_ - 1);
  return out;
}

ComposedPlan SplitCosts::compose(const std::vector<int>& layers_per_ipu, bool heads_on_last) const {
  const Scenario& sc = scenario_;
  const Execution& ex = sc.execution;
  const std::vector<int> units = stage_units(layers_per_ipu, heads_on_last);
  ComposedPlan out;
  for (std::size_t i = 0; i < units.size(); i += 2) out.blocks.emplace_back(units[i], units[i + 1]);
  const int P = static_cast<int>(out.blocks.size());
  const int L = P - 1;
  const int S = ex.training ? 2 * P - 1 : P;
  auto ipu_of_stage = [&](int fs) { return fs < ipus_ ? fs : 0; };
  std::vector<int> stage_of_unit(static_cast<std::size_t>(units_));
  for (int fs = 0; fs < P; ++fs)
    for (int u = out.blocks[fs].first; u <= out.blocks[fs].second; ++u) stage_of_unit[static_cast<std::size_t>(u)] = fs;
  auto stage_of_op = [&](int op) { return stage_of_unit[static_cast<std::size_t>(unit_of(static_cast<std::size_t>(op)))]; };

  Plan& plan = out.plan;
  plan.training = ex.training;
  plan.clock_hz = sc.hardware.ipu.clock_hz;
  plan.micro_batch_size = ex.micro_batch_size;
  plan.annotated = true;
  std::vector<int> ipu_of_forward_stage;
  for (int fs = 0; fs < P; ++fs) ipu_of_forward_stage.push_back(ipu_of_stage(fs));
  lay_out_stages(plan, ipu_of_forward_stage, ex.training);
  for (int fs = 0; fs < P; ++fs) {
    const auto [first, last] = out.blocks[fs];
    const BlockCost& c = block_cost(first, last, ipu_of_stage(fs));
    const Block& b = block(first, last);
    PlanStage& st = plan.stages[fs];
    st.forward_seconds = c.forward_seconds;
    st.host_input_bytes = b.host_input_bytes;
    st.host_output_bytes = b.host_output_bytes;
    st.live_bytes = b.live_bytes;
    if (ex.training) plan.stages[2 * L - fs].backward_seconds += c.backward_seconds;
  }
  if (ex.training)
    for (int s = L + 1; s < S; ++s) plan.stages[s].recompute_seconds = plan.stages[2 * L - s].forward_seconds;

  // Copies as make_plan chains them, hop by hop to the last stage on another IPU that reads the tensor.
  std::vector<PlanCopy> forward(static_cast<std::size_t>(std::max(P - 1, 0)));
  std::vector<std::vector<int>> carried(forward.size());
  for (int t : crossing_) {
    const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
    int from = P;
    if (info.kind == TensorKind::Input)
      for (int c : info.consumers) from = std::min(from, stage_of_op(c));
    else
      from = stage_of_op(info.producer);
    int last = from;
    for (int c : info.consumers)
      if (ipu_of_stage(stage_of_op(c)) != ipu_of_stage(from)) last = std::max(last, stage_of_op(c));
    for (int s = from; s < last; ++s) forward[s].bytes += info.bytes, carried[s].push_back(t);
  }
  for (int s = 0; s + 1 < P; ++s) {
    PlanCopy c = forward[s];
    c.from_stage = s, c.to_stage = s + 1;
    c.src_ipu = ipu_of_stage(s), c.dst_ipu = ipu_of_stage(s + 1);
    if (c.bytes > 0) plan.copies.push_back(c);
  }
  if (ex.training)
    for (int s = P - 2; s >= 0; --s) {
      PlanCopy c;
      c.gradient = true;
      c.from_stage = 2 * L - (s + 1), c.to_stage = 2 * L - s;
      c.src_ipu = ipu_of_stage(s + 1), c.dst_ipu = ipu_of_stage(s);
      for (int t : carried[s])
        if (tensors_[static_cast<std::size_t>(t)].kind == TensorKind::Activation) c.bytes += tensors_[static_cast<std::size_t>(t)].bytes;
      if (c.bytes > 0) plan.copies.push_back(c);
    }
  for (std::size_t i = 0; i < plan.copies.size(); ++i) plan.copies[i].id = static_cast<int>(i);

  // Weights: each on its first user's IPU; its gradient complete in the backward of its earliest user's stage.
  auto dtype_of = [&](int t) { return tensors_[static_cast<std::size_t>(t)].dtype; };
  auto merge = [](UnitWeights& into, const UnitWeights& w) {
    into.elements += w.elements, into.bytes += w.bytes, into.count += w.count;
    if (into.first < 0 || (w.first >= 0 && w.first < into.first)) into.first = w.first;
    for (const auto& [shape, elements] : w.shapes) add_weight(into.shapes, shape, elements);
  };
  if (ex.training) {
    std::vector<UnitWeights> by_stage(static_cast<std::size_t>(S));
    for (int u = 0; u < units_; ++u) merge(by_stage[static_cast<std::size_t>(2 * L - stage_of_unit[static_cast<std::size_t>(u)])], completing_[static_cast<std::size_t>(u)]);
    for (int s = 0; s < S; ++s) {
      const UnitWeights& w = by_stage[static_cast<std::size_t>(s)];
      PlanStage& st = plan.stages[s];
      st.weight_elements = w.elements, st.weight_bytes = w.bytes;
      if (w.count > 0)
        std::tie(st.update_seconds, st.state_bytes) =
            weight_update_cost(sc, *cost_models_[static_cast<std::size_t>(st.ipu)], w.elements, w.bytes, dtype_of(w.first), w.count);
    }
  }
  std::vector<UnitWeights> by_ipu(static_cast<std::size_t>(ipus_));
  for (int u = 0; u < units_; ++u) merge(by_ipu[static_cast<std::size_t>(ipu_of_stage(stage_of_unit[static_cast<std::size_t>(u)]))], unit_weights_[static_cast<std::size_t>(u)]);
  const auto& excluded = ex.weight_update_excluded_ipus;
  auto is_excluded = [&](int ipu) { return std::find(excluded.begin(), excluded.end(), ipu) != excluded.end(); };
  for (int id = 0; id < ipus_; ++id) {
    const UnitWeights& w = by_ipu[static_cast<std::size_t>(id)];
    PlanIpu ipu;
    ipu.id = id;
    for (const PlanStage& st : plan.stages)
      if (st.ipu == id) ipu.stages.push_back(st.id);
    for (int fs = 0; fs < P; ++fs)
      if (ipu_of_stage(fs) == id)
        ipu.temp_bytes_per_tile = std::max(ipu.temp_bytes_per_tile, block_cost(out.blocks[fs].first, out.blocks[fs].second, id).temp_bytes_per_tile);
    ipu.weight_elements = w.elements, ipu.weight_bytes = w.bytes, ipu.weight_tensors = w.count;
    if (ex.training && w.elements > 0)
      std::tie(ipu.update_seconds, ipu.state_bytes) =
          weight_update_cost(sc, *cost_models_[static_cast<std::size_t>(id)], w.elements, w.bytes, dtype_of(w.first), w.count);
    // OverlapMemoryOptimized overlaps the updates of weights shaped like a weight of another IPU not excluded.
    if (ex.training && ex.weight_update_schedule == WeightUpdateSchedule::OverlapMemoryOptimized && !is_excluded(id) &&
        w.elements > 0) {
      double shared = 0;
      for (const auto& [shape, elements] : w.shapes) {
        bool elsewhere = false;
        for (int other = 0; other < ipus_; ++other)
          if (other != id && !is_excluded(other))
            for (const auto& [s2, e2] : by_ipu[static_cast<std::size_t>(other)].shapes) elsewhere = elsewhere || s2 == shape;
        if (elsewhere) shared += elements;
      }
      ipu.shared_update_fraction = shared / w.elements;
    }
    plan.ipus.push_back(ipu);
  }
  return out;
}

MemoryReport SplitCosts::memory(const ComposedPlan& composed, bool recompute) const {
  const Scenario& sc = scenario_;
  const Execution& ex = sc.execution;
  const IpuSpec& spec = sc.hardware.ipu;
  const Plan& plan = composed.plan;
  const int L = plan.loss_stage;
  MemoryReport report;
  std::vector<int> stage_of_unit(static_cast<std::size_t>(units_));
  for (int fs = 0; fs < plan.forward_stage_count; ++fs)
    for (int u = composed.blocks[fs].first; u <= composed.blocks[fs].second; ++u) stage_of_unit[static_cast<std::size_t>(u)] = fs;
  for (const PlanIpu& ipu : plan.ipus) {
    double bytes = 0, tile = 0;
    auto add = [&](double b, double t) { bytes += b, tile += t; };
    for (int u = 0; u < units_; ++u) {
      if (plan.stages[stage_of_unit[static_cast<std::size_t>(u)]].ipu != ipu.id) continue;
      const UnitWeights& w = unit_weights_[static_cast<std::size_t>(u)];
      add(w.bytes, w.tile);
      if (ex.training && ex.gradient_accumulation > 1) add(w.bytes, w.tile);
      if (ex.training) add(w.state_bytes, w.state_tile);
    }
    std::vector<int> forward_stages;
    for (int s : ipu.stages)
      if (!plan.stages[s].backward) forward_stages.push_back(s);
    double live = 0;
    for (int s : ipu.stages) {
      const PlanStage& st = plan.stages[s];
      const auto [first, last] = composed.blocks[st.forward_stage];
      const bool backward = st.backward || st.backward_seconds > 0;
      live = std::max(live, block(first, last).live_bytes * (backward ? 2.0 : 1.0) +
                                (backward ? block(first, last).weights_read_bytes : 0.0));
    }
    add(live, tile0_share(live, 2, spec));
    add(ipu.temp_bytes_per_tile * static_cast<double>(spec.tiles), ipu.temp_bytes_per_tile);
    for (int s : forward_stages) {
      if (!plan.training || s >= L) continue;  // PopART's stash depth: none for the loss stage
      const double depth = 2.0 * (L - s) + 1;
      const auto [first, last] = composed.blocks[s];
      if (recompute) {
        int other_first = -1, other_last = -1;
        for (int o : forward_stages)
          if (o != s) other_first = composed.blocks[o].first, other_last = composed.blocks[o].second;
        const auto [b, t] = recompute_stash(first, last, other_first, other_last);
        add(depth * b, depth * t);
      } else {
        add(depth * block(first, last).stash_bytes, depth * block(first, last).stash_tile);
      }
    }
    std::set<int> outlined;
    const double copies = ex.training ? 2.0 : 1.0;
    for (int s : forward_stages) {
      const Block& b = block(composed.blocks[s].first, composed.blocks[s].second);
      if (ex.host_io) add(b.host_buffer_bytes, b.host_buffer_tile);
      for (const auto& [signature, tiles] : b.code)
        if (outlined.insert(signature).second) add(copies * spec.code_bytes_per_op * tiles, copies * spec.code_bytes_per_op);
    }
    IpuMemory m;
    m.id = ipu.id;
    m.total_bytes = bytes;
    m.fullest_tile_bytes = tile;
    add_to_report(report, m, spec);
  }
  return report;
}

} // namespace ipusim
