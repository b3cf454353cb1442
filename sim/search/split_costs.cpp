#include "sim/search/split_costs.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "sim/plan/op_pass_cost.hpp"

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

SplitCosts::SplitCosts(const Scenario& sc, const LayerStructure& layers, std::int64_t micro_batch, bool accumulating,
                       std::vector<double> amps)
    : scenario_(sc), micro_batch_(micro_batch), accumulating_(accumulating), amps_(std::move(amps)) {
  const ModelGraph g = unplaced_graph(sc.model);
  units_ = static_cast<int>(layers.names.size()) + 2;
  units_per_layer_ = layers.units_per_layer;
  for (int u : layers.unit_of_op) unit_of_op_.push_back(u + 1);
  has_stem_ = std::find(unit_of_op_.begin(), unit_of_op_.end(), 0) != unit_of_op_.end();
  has_heads_ = std::find(unit_of_op_.begin(), unit_of_op_.end(), units_ - 1) != unit_of_op_.end();
  topological_order_ = g.topological_order;
  blocks_.resize(static_cast<std::size_t>(units_ * units_));
  block_costs_.resize(blocks_.size() * amps_.size());

  const std::map<std::string, int> id = index_tensors(g);
  check_layer_order();
  cost_ops(id);
  for (const auto& a : g.anchors) anchors_.push_back(id.at(a));
  sum_unit_weights(g, id);
  sum_cut_bytes();
  weight_prefixes();
}

void SplitCosts::sum_cut_bytes() {
  const int heads = units_ - 1;
  for (int last = 0; last < 2; ++last) cut_bytes_[last].assign(static_cast<std::size_t>(units_) + 1, 0.0);
  for (int t : crossing_) {
    const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
    if (info.kind != TensorKind::Activation || info.producer < 0) continue;
    const int from = unit_of(static_cast<std::size_t>(info.producer));
    int read_to = from, read_to_before_heads = from;  // the last unit reading it (other than the heads)
    for (int c : info.consumers) {
      const int u = unit_of(static_cast<std::size_t>(c));
      read_to = std::max(read_to, u);
      if (u != heads) read_to_before_heads = std::max(read_to_before_heads, u);
    }
    for (int v = from + 1; v <= read_to; ++v) cut_bytes_[1][static_cast<std::size_t>(v)] += info.bytes;
    for (int v = from + 1; v <= read_to_before_heads; ++v) cut_bytes_[0][static_cast<std::size_t>(v)] += info.bytes;
  }
}

std::map<std::string, int> SplitCosts::index_tensors(const ModelGraph& g) {
  const Model& m = scenario_.model;
  std::map<std::string, int> id;
  for (const auto& [name, t] : m.tensors) {
    id.emplace(name, static_cast<int>(tensors_.size()));
    TensorInfo info;
    info.kind = t.kind;
    info.dtype = t.dtype;
    info.bytes = t.kind == TensorKind::Weight ? static_cast<double>(t.bytes()) : t.bytes_per_micro_batch(micro_batch_);
    info.tile = tile0_share(info.bytes, dtype_bytes(t.dtype), scenario_.hardware.ipu);
    if (auto p = g.producer.find(name); p != g.producer.end()) {
      info.producer = static_cast<int>(p->second);
      info.checkpoint = is_checkpoint(m.ops[p->second]);
    }
    if (auto c = g.consumers.find(name); c != g.consumers.end())
      for (auto u : c->second) info.consumers.push_back(static_cast<int>(u));
    tensors_.push_back(std::move(info));
  }
  return id;
}

// Splits cut the layers in order: an op reading a later layer's output makes them unusable.
void SplitCosts::check_layer_order() {
  const Model& m = scenario_.model;
  for (const TensorInfo& t : tensors_)
    for (int c : t.consumers)
      if (t.producer >= 0 && unit_of(static_cast<std::size_t>(t.producer)) > unit_of(static_cast<std::size_t>(c)) &&
          usable_) {
        usable_ = false;
        why_ = "op " + m.ops[static_cast<std::size_t>(c)].name + " reads the output of " +
               m.ops[static_cast<std::size_t>(t.producer)].name + ", in a later layer";
      }
}

// Each op's tensors, code signature and tiles, and its forward and backward cost under each
// availableMemoryProportion.
void SplitCosts::cost_ops(const std::map<std::string, int>& id) {
  const Model& m = scenario_.model;
  const Execution& ex = scenario_.execution;
  const IpuSpec& spec = scenario_.hardware.ipu;
  std::map<std::string, int> signature_id;
  const TensorFacts facts = tensor_facts(m);
  for (double amp : amps_) {
    cost_models_.push_back(make_cost_model(ex.cost_model, spec, cost_options(ex, amp)));
    if (!cost_models_.back() && usable_) usable_ = false, why_ = "unknown cost model \"" + ex.cost_model + "\"";
  }
  forward_cost_.assign(amps_.size(), std::vector<OpCost>(m.ops.size()));
  backward_cost_ = forward_cost_;
  for (const Op& op : m.ops) {
    std::vector<int> in, out;
    for (const auto& t : op.inputs) in.push_back(id.at(t));
    for (const auto& t : op.outputs) out.push_back(id.at(t));
    op_inputs_.push_back(std::move(in));
    op_outputs_.push_back(std::move(out));
    op_reads_.push_back(backward_reads(op.type));
    op_signature_.push_back(signature_id.emplace(code_signature(m, op), static_cast<int>(signature_id.size())).first->second);
    op_tiles_.push_back(tiles_used(forward_work(m, op, micro_batch_), spec));
    if (!usable_) continue;
    OpWork forward = forward_work(m, op, micro_batch_, facts);
    forward.training = ex.training;
    OpWork backward;
    if (ex.training) {
      backward = backward_work(m, op, micro_batch_, facts);
      backward.training = true;
      backward.accumulates_weight_gradients = accumulating_;
    }
    const OpCommunication communication = op_communication(scenario_.hardware, m, op, ex, micro_batch_);
    for (std::size_t a = 0; a < cost_models_.size(); ++a) {
      forward_cost_[a][op.index] = op_pass_cost(communication, *cost_models_[a], forward, false);
      if (ex.training) backward_cost_[a][op.index] = op_pass_cost(communication, *cost_models_[a], backward, true);
    }
  }
}

// Per unit: its weights (by the unit of their first user, and by the unit that completes
// them), the non-activation tensors several units share, and the tensors crossing units.
void SplitCosts::sum_unit_weights(const ModelGraph& g, const std::map<std::string, int>& id) {
  const Model& m = scenario_.model;
  std::map<std::vector<std::int64_t>, int> shape_id;
  unit_weights_.resize(static_cast<std::size_t>(units_));
  completing_ = unit_weights_;
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
      if (t.elements() >= kMinElementsForReplicatedTensorSharding) w->shardable += 1;
      if (w->first < 0) w->first = tid;
    }
    UnitWeights& w = unit_weights_[unit_of(users.front())];
    w.tile += tensors_[tid].tile;
    w.tensor_elements.push_back(elements);
    add_weight(w.shapes, shape_id.emplace(t.shape, static_cast<int>(shape_id.size())).first->second, elements);
  }
}

// Prefix sums over the units: weight bytes, their fullest-tile bytes, optimizer state bytes.
void SplitCosts::weight_prefixes() {
  const Execution& ex = scenario_.execution;
  const int state_tensors = ex.training ? optimizer_state_tensors(ex.optimizer) : 0;
  weight_prefix_.assign(static_cast<std::size_t>(units_) + 1, 0);
  weight_tile_prefix_ = state_bytes_prefix_ = weight_prefix_;
  for (int u = 0; u < units_; ++u) {
    const UnitWeights& w = unit_weights_[static_cast<std::size_t>(u)];
    const auto i = static_cast<std::size_t>(u);
    weight_prefix_[i + 1] = weight_prefix_[i] + w.bytes;
    weight_tile_prefix_[i + 1] = weight_tile_prefix_[i] + w.tile;
    state_bytes_prefix_[i + 1] =
        state_bytes_prefix_[i] + static_cast<double>(state_tensors) * w.elements * static_cast<double>(dtype_bytes(ex.optimizer_state_dtype));
  }
}

const std::vector<double>& SplitCosts::state_tile_prefix(double shards) const {
  auto [it, added] = state_tile_prefixes_.try_emplace(shards);
  if (!added) return it->second;
  const Execution& ex = scenario_.execution;
  const int n = ex.training ? optimizer_state_tensors(ex.optimizer) : 0;
  const auto bytes = dtype_bytes(ex.optimizer_state_dtype);
  std::vector<double>& prefix = it->second;
  prefix.assign(static_cast<std::size_t>(units_) + 1, 0);
  for (int u = 0; u < units_; ++u) {
    double tile = 0;
    // estimate_memory: each of the n state tensors of a weight is spread like its own buffer.
    for (double elements : unit_weights_[static_cast<std::size_t>(u)].tensor_elements) {
      const double state = static_cast<double>(n) * elements * static_cast<double>(bytes) / shards;
      for (int i = 0; i < n; ++i) tile += tile0_share(state / n, bytes, scenario_.hardware.ipu);
    }
    prefix[static_cast<std::size_t>(u) + 1] = prefix[static_cast<std::size_t>(u)] + tile;
  }
  return prefix;
}

std::pair<double, double> SplitCosts::weight_memory(int first, int last, bool accumulators,
                                                    const MemorySettings& settings) const {
  const auto a = static_cast<std::size_t>(first), b = static_cast<std::size_t>(last) + 1;
  double bytes = weight_prefix_[b] - weight_prefix_[a], tile = weight_tile_prefix_[b] - weight_tile_prefix_[a];
  if (accumulators) bytes *= 2, tile *= 2;
  if (scenario_.execution.training && settings.state_on_chip) {
    bytes += (state_bytes_prefix_[b] - state_bytes_prefix_[a]) / settings.shards;
    const auto& prefix = state_tile_prefix(settings.shards);
    tile += prefix[b] - prefix[a];
  }
  return {bytes, tile};
}

const SplitCosts::Block& SplitCosts::block(int first, int last) const {
  Block& b = blocks_[static_cast<std::size_t>(first * units_ + last)];
  if (b.ready) return b;
  b.ready = true;
  std::vector<std::size_t> ops;
  for (std::size_t op : topological_order_)
    if (first <= unit_of(op) && unit_of(op) <= last) ops.push_back(op);
  add_host_streams(first, last, b);
  add_tensors(first, last, ops, b);
  // Code: each signature's ops share one outlined copy (two in training: forward and backward).
  std::set<int> outlined;
  const double copies = scenario_.execution.training ? 2.0 : 1.0;
  const double per_op = scenario_.hardware.ipu.code_bytes_per_op;
  for (std::size_t op : ops)
    if (outlined.insert(op_signature_[op]).second) {
      b.code.emplace_back(op_signature_[op], op_tiles_[op]);
      b.code_bytes += copies * per_op * op_tiles_[op], b.code_tile += copies * per_op;
    }
  return b;
}

// Host streams, as make_plan assigns them: an input at its first reader's stage, an anchor at its producer's.
void SplitCosts::add_host_streams(int first, int last, Block& b) const {
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
    if (info.producer < 0) continue;
    const int unit = unit_of(static_cast<std::size_t>(info.producer));
    if (unit < first || unit > last) continue;
    b.host_output_bytes += info.bytes;
    b.host_buffer_bytes += info.bytes, b.host_buffer_tile += info.tile;
  }
}

// describe_activations and estimate_memory's per-stage parts, on tensor ids (ids are in name
// order): the weights read, the stash the backward reads, the tensors entering, and the peak of
// the activations live through the forward.
void SplitCosts::add_tensors(int first, int last, const std::vector<std::size_t>& ops, Block& b) const {
  auto inside = [&](int op) {
    const int unit = unit_of(static_cast<std::size_t>(op));
    return first <= unit && unit <= last;
  };
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
  b.stash_read.assign(read.begin(), read.end());
  b.entering.assign(entering.begin(), entering.end());
}

const SplitCosts::BlockCost& SplitCosts::block_cost(int first, int last, int amp) const {
  BlockCost& c = block_costs_[static_cast<std::size_t>((first * units_ + last)) * amps_.size() + static_cast<std::size_t>(amp)];
  if (c.ready) return c;
  c.ready = true;
  const double clock = scenario_.hardware.ipu.clock_hz;
  const bool training = scenario_.execution.training;
  for (std::size_t op : topological_order_) {
    if (unit_of(op) < first || unit_of(op) > last) continue;
    const OpCost& fc = forward_cost_[static_cast<std::size_t>(amp)][op];
    c.forward_seconds += fc.cycles() / clock;
    c.temp_bytes_per_tile = std::max(c.temp_bytes_per_tile, fc.temp_bytes_per_tile);
    if (!training) continue;
    const OpCost& bc = backward_cost_[static_cast<std::size_t>(amp)][op];
    c.backward_seconds += bc.cycles() / clock;
    c.temp_bytes_per_tile = std::max(c.temp_bytes_per_tile, bc.temp_bytes_per_tile);
  }
  return c;
}

double SplitCosts::unit_seconds(int unit, int amp, bool recompute) const {
  const BlockCost& c = block_cost(unit, unit, amp);
  return c.forward_seconds + c.backward_seconds + (recompute ? c.forward_seconds : 0.0);
}

// Under recomputation the stash holds the tensors entering the stage, the user's checkpoints it
// reads again and those it sends to another IPU that its backward reads (make_plan's recompute_stash_tensors); `other_*` is the
// other stage on the same IPU, if any (-1).
std::pair<double, double> SplitCosts::recompute_stash(int first, int last, int other_first, int other_last) const {
  auto [it, added] = recompute_stashes_.try_emplace({first, last, other_first, other_last});
  if (!added) return it->second;
  const Block& b = block(first, last);
  auto here = [&](int op, int lo, int hi) { return lo <= unit_of(static_cast<std::size_t>(op)) && unit_of(static_cast<std::size_t>(op)) <= hi; };
  std::set<int> stash(b.entering.begin(), b.entering.end());
  // The user's checkpoints the stage reads again are stashed, not recomputed (make_plan).
  for (int t = 0; t < static_cast<int>(tensors_.size()); ++t) {
    const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
    if (!info.checkpoint || !here(info.producer, first, last)) continue;
    if (std::any_of(info.consumers.begin(), info.consumers.end(), [&](int c) { return here(c, first, last); }))
      stash.insert(t);
  }
  for (int t : b.stash_read) {
    const TensorInfo& info = tensors_[static_cast<std::size_t>(t)];
    if (info.producer < 0 || !here(info.producer, first, last)) continue;
    for (int c : info.consumers)
      if (!here(c, first, last) && !here(c, other_first, other_last)) stash.insert(t);
  }
  for (int t : stash) it->second.first += tensors_[static_cast<std::size_t>(t)].bytes, it->second.second += tensors_[static_cast<std::size_t>(t)].tile;
  return it->second;
}

std::vector<int> SplitCosts::ipu_of_unit(const Split& split) const {
  const auto stages = stage_blocks(split);
  const int ipus = static_cast<int>(split.layers_per_ipu.size());
  std::vector<int> out(static_cast<std::size_t>(units_), 0);
  for (std::size_t s = 0; s < stages.size(); ++s)
    for (int u = stages[s].first; u <= stages[s].second; ++u)
      out[static_cast<std::size_t>(u)] = static_cast<int>(s) < ipus ? static_cast<int>(s) : 0;
  return out;
}

bool SplitCosts::refused(const std::vector<int>& ipu_of_unit) const {
  for (const auto& units : shared_by_units_)
    for (int u : units)
      if (ipu_of_unit[static_cast<std::size_t>(u)] != ipu_of_unit[static_cast<std::size_t>(units.front())]) return true;
  return false;
}

// First and last unit of each forward stage: the stem and the first block on IPU 0 (the stem
// alone when IPU 0 holds no layer), block i on IPU i, the heads with the last block (alone when
// the last IPU holds no layer) or in a final stage back on IPU 0.
std::vector<std::pair<int, int>> SplitCosts::stage_blocks(const Split& split) const {
  std::vector<std::pair<int, int>> out;
  int next = 1;
  const auto& per_ipu = split.layers_per_ipu;
  for (std::size_t i = 0; i < per_ipu.size(); ++i) {
    const int first = i == 0 ? 0 : next;
    next += per_ipu[i];
    out.emplace_back(first, i + 1 == per_ipu.size() && split.heads_on_last ? units_ - 1 : next - 1);
  }
  if (!split.heads_on_last) out.emplace_back(units_ - 1, units_ - 1);
  return out;
}

IpuBlocks SplitCosts::ipu_blocks(const std::vector<std::pair<int, int>>& stages, int ipu, int ipus,
                                 const std::vector<int>& stash_depth) const {
  IpuBlocks b;
  const int P = static_cast<int>(stages.size());
  for (int s = 0; s < P; ++s) {
    if ((s < ipus ? s : 0) != ipu) continue;
    b.block[b.count] = stages[static_cast<std::size_t>(s)];
    b.stash_depth[b.count] = s < static_cast<int>(stash_depth.size()) ? stash_depth[static_cast<std::size_t>(s)] : 0;
    b.loss[b.count] = s == P - 1;
    ++b.count;
  }
  return b;
}

IpuFootprint SplitCosts::footprint(const IpuBlocks& ib, const MemorySettings& settings) const {
  return footprints(ib, settings, {settings.amp}).front();
}

std::vector<IpuFootprint> SplitCosts::footprints(const IpuBlocks& ib, const MemorySettings& settings,
                                                 const std::vector<int>& amps) const {
  const Execution& ex = scenario_.execution;
  const IpuSpec& spec = scenario_.hardware.ipu;
  // Everything but the availableMemoryProportion's part: matmul temporaries and times.
  IpuFootprint base;
  double live = 0;
  for (int k = 0; k < ib.count; ++k) {
    const auto [first, last] = ib.block[k];
    const Block& b = block(first, last);
    const auto [wb, wt] = weight_memory(first, last, ex.training && accumulating_, settings);
    base.total_bytes += wb, base.tile_bytes += wt;
    live = std::max(live, ex.training ? 2 * b.live_bytes + b.weights_read_bytes : b.live_bytes);
    if (ex.training && ib.stash_depth[k] > 0) {
      const double depth = ib.stash_depth[k];
      if (settings.recompute) {
        const int o = 1 - k;
        const auto [sb, st] = recompute_stash(first, last, ib.count > 1 ? ib.block[o].first : -1,
                                              ib.count > 1 ? ib.block[o].second : -1);
        base.total_bytes += depth * sb, base.tile_bytes += depth * st;
      } else {
        base.total_bytes += depth * b.stash_bytes, base.tile_bytes += depth * b.stash_tile;
      }
    }
    if (ex.host_io) base.total_bytes += b.host_buffer_bytes, base.tile_bytes += b.host_buffer_tile;
  }
  base.total_bytes += live, base.tile_bytes += tile0_share(live, 2, spec);
  if (ib.count == 1) {
    const Block& b = block(ib.block[0].first, ib.block[0].second);
    base.total_bytes += b.code_bytes, base.tile_bytes += b.code_tile;
  } else {
    std::set<int> outlined;
    const double copies = ex.training ? 2.0 : 1.0;
    for (int k = 0; k < ib.count; ++k)
      for (const auto& [signature, tiles] : block(ib.block[k].first, ib.block[k].second).code)
        if (outlined.insert(signature).second)
          base.total_bytes += copies * spec.code_bytes_per_op * tiles, base.tile_bytes += copies * spec.code_bytes_per_op;
  }
  std::vector<IpuFootprint> out;
  for (int amp : amps) {
    IpuFootprint f = base;
    double temp = 0;
    for (int k = 0; k < ib.count; ++k) {
      const BlockCost& c = block_cost(ib.block[k].first, ib.block[k].second, amp);
      temp = std::max(temp, c.temp_bytes_per_tile);
      const double backward = c.backward_seconds + (settings.recompute && !ib.loss[k] ? c.forward_seconds : 0.0);
      f.stage_seconds[k][0] = c.forward_seconds, f.stage_seconds[k][1] = backward;
      f.forward_seconds += c.forward_seconds;
      f.backward_seconds += backward;
    }
    f.seconds = f.forward_seconds + f.backward_seconds;
    f.total_bytes += temp * static_cast<double>(spec.tiles), f.tile_bytes += temp;
    out.push_back(f);
  }
  return out;
}

// compose's steps for one split: where its units and forward stages are, and the plan's
// stages, copies, weights and IPUs from the tables.
class SplitCosts::Composer {
public:
  Composer(const SplitCosts& costs, const Split& split, const Execution& ex,
           const std::vector<std::pair<int, int>>& blocks)
      : costs_(costs), split_(split), ex_(ex), blocks_(blocks), ipus_(static_cast<int>(split.layers_per_ipu.size())),
        P_(static_cast<int>(blocks.size())), L_(P_ - 1), S_(ex.training ? 2 * P_ - 1 : P_),
        stage_of_unit_(static_cast<std::size_t>(costs.units_)) {
    for (int fs = 0; fs < P_; ++fs)
      for (int u = blocks_[fs].first; u <= blocks_[fs].second; ++u) stage_of_unit_[static_cast<std::size_t>(u)] = fs;
  }

  // The stages as make_plan lays them out, with their blocks' times, host streams and live bytes.
  void set_stage_figures(Plan& plan) const {
    std::vector<int> ipu_of_forward_stage;
    for (int fs = 0; fs < P_; ++fs) ipu_of_forward_stage.push_back(ipu_of_stage(fs));
    lay_out_stages(plan, ipu_of_forward_stage, ex_.training);
    for (int fs = 0; fs < P_; ++fs) {
      const auto [first, last] = blocks_[fs];
      const BlockCost& c = costs_.block_cost(first, last, amp_of(ipu_of_stage(fs)));
      const Block& b = costs_.block(first, last);
      PlanStage& st = plan.stages[fs];
      st.forward_seconds = c.forward_seconds;
      st.host_input_bytes = b.host_input_bytes;
      st.host_output_bytes = b.host_output_bytes;
      st.live_bytes = b.live_bytes;
      if (ex_.training) plan.stages[2 * L_ - fs].backward_seconds += c.backward_seconds;
    }
    if (ex_.training)
      for (int s = L_ + 1; s < S_; ++s) plan.stages[s].recompute_seconds = plan.stages[2 * L_ - s].forward_seconds;
  }

  // Copies as make_plan chains them, hop by hop to the last stage on another IPU that reads the
  // tensor; in training each forward hop's activations come back as a gradient copy.
  void add_copies(Plan& plan) const {
    std::vector<PlanCopy> forward(static_cast<std::size_t>(std::max(P_ - 1, 0)));
    std::vector<std::vector<int>> carried(forward.size());
    for (int t : costs_.crossing_) {
      const TensorInfo& info = costs_.tensors_[static_cast<std::size_t>(t)];
      const int from = first_stage_of(info);
      int last = from;
      for (int c : info.consumers)
        if (ipu_of_stage(stage_of_op(c)) != ipu_of_stage(from)) last = std::max(last, stage_of_op(c));
      for (int s = from; s < last; ++s) forward[s].bytes += info.bytes, carried[s].push_back(t);
    }
    for (int s = 0; s + 1 < P_; ++s) {
      PlanCopy c = forward[s];
      c.from_stage = s, c.to_stage = s + 1;
      c.src_ipu = ipu_of_stage(s), c.dst_ipu = ipu_of_stage(s + 1);
      if (c.bytes > 0) plan.copies.push_back(c);
    }
    if (ex_.training)
      for (int s = P_ - 2; s >= 0; --s) {
        PlanCopy c;
        c.gradient = true;
        c.from_stage = 2 * L_ - (s + 1), c.to_stage = 2 * L_ - s;
        c.src_ipu = ipu_of_stage(s + 1), c.dst_ipu = ipu_of_stage(s);
        for (int t : carried[s])
          if (costs_.tensors_[static_cast<std::size_t>(t)].kind == TensorKind::Activation)
            c.bytes += costs_.tensors_[static_cast<std::size_t>(t)].bytes;
        if (c.bytes > 0) plan.copies.push_back(c);
      }
    for (std::size_t i = 0; i < plan.copies.size(); ++i) plan.copies[i].id = static_cast<int>(i);
  }

  // Weights: each on its first user's IPU; its gradient complete in the backward of its earliest user's stage.
  void add_weights(Plan& plan) const {
    if (ex_.training) set_stage_weights(plan);
    std::vector<UnitWeights> by_ipu(static_cast<std::size_t>(ipus_));
    for (int u = 0; u < costs_.units_; ++u)
      merge(by_ipu[static_cast<std::size_t>(ipu_of_stage(stage_of_unit_[static_cast<std::size_t>(u)]))],
            costs_.unit_weights_[static_cast<std::size_t>(u)]);
    for (int id = 0; id < ipus_; ++id) plan.ipus.push_back(composed_ipu(plan, by_ipu, id));
  }

private:
  int ipu_of_stage(int fs) const { return fs < ipus_ ? fs : 0; }
  int amp_of(int ipu) const { return split_.amp.empty() ? 0 : split_.amp[static_cast<std::size_t>(ipu)]; }
  int stage_of_op(int op) const {
    return stage_of_unit_[static_cast<std::size_t>(costs_.unit_of(static_cast<std::size_t>(op)))];
  }
  DType dtype_of(int t) const { return costs_.tensors_[static_cast<std::size_t>(t)].dtype; }
  bool is_excluded(int ipu) const {
    const auto& excluded = ex_.weight_update_excluded_ipus;
    return std::find(excluded.begin(), excluded.end(), ipu) != excluded.end();
  }

  // The stage a crossing tensor leaves from: its producer's, or a host input's first reader's.
  int first_stage_of(const TensorInfo& info) const {
    if (info.kind != TensorKind::Input) return stage_of_op(info.producer);
    int from = P_;
    for (int c : info.consumers) from = std::min(from, stage_of_op(c));
    return from;
  }

  static void merge(UnitWeights& into, const UnitWeights& w) {
    into.elements += w.elements, into.bytes += w.bytes, into.count += w.count, into.shardable += w.shardable;
    if (into.first < 0 || (w.first >= 0 && w.first < into.first)) into.first = w.first;
    for (const auto& [shape, elements] : w.shapes) add_weight(into.shapes, shape, elements);
  }

  // Each backward stage's weights: those whose gradient it completes, with their update.
  void set_stage_weights(Plan& plan) const {
    std::vector<UnitWeights> by_stage(static_cast<std::size_t>(S_));
    for (int u = 0; u < costs_.units_; ++u)
      merge(by_stage[static_cast<std::size_t>(2 * L_ - stage_of_unit_[static_cast<std::size_t>(u)])],
            costs_.completing_[static_cast<std::size_t>(u)]);
    for (int s = 0; s < S_; ++s) {
      const UnitWeights& w = by_stage[static_cast<std::size_t>(s)];
      PlanStage& st = plan.stages[s];
      st.weight_elements = w.elements, st.weight_bytes = w.bytes;
      if (w.count > 0)
        std::tie(st.update_seconds, st.state_bytes) =
            weight_update_cost(ex_, *costs_.cost_models_[static_cast<std::size_t>(amp_of(st.ipu))], w.elements, w.bytes,
                               dtype_of(w.first), w.count);
    }
  }

  PlanIpu composed_ipu(const Plan& plan, const std::vector<UnitWeights>& by_ipu, int id) const {
    const UnitWeights& w = by_ipu[static_cast<std::size_t>(id)];
    PlanIpu ipu;
    ipu.id = id;
    for (const PlanStage& st : plan.stages)
      if (st.ipu == id) ipu.stages.push_back(st.id);
    for (int fs = 0; fs < P_; ++fs)
      if (ipu_of_stage(fs) == id) {
        const BlockCost& c = costs_.block_cost(blocks_[fs].first, blocks_[fs].second, amp_of(id));
        ipu.temp_bytes_per_tile = std::max(ipu.temp_bytes_per_tile, c.temp_bytes_per_tile);
      }
    ipu.weight_elements = w.elements, ipu.weight_bytes = w.bytes, ipu.weight_tensors = w.count;
    ipu.shardable_weight_tensors = w.shardable;
    if (ex_.training && w.elements > 0)
      std::tie(ipu.update_seconds, ipu.state_bytes) =
          weight_update_cost(ex_, *costs_.cost_models_[static_cast<std::size_t>(amp_of(id))], w.elements, w.bytes,
                             dtype_of(w.first), w.count);
    if (ex_.training && ex_.weight_update_schedule == WeightUpdateSchedule::OverlapMemoryOptimized &&
        !is_excluded(id) && w.elements > 0)
      ipu.shared_update_fraction = shared_update_fraction(by_ipu, id);
    return ipu;
  }

  // OverlapMemoryOptimized overlaps the updates of weights shaped like a weight of another IPU not excluded.
  double shared_update_fraction(const std::vector<UnitWeights>& by_ipu, int id) const {
    const UnitWeights& w = by_ipu[static_cast<std::size_t>(id)];
    double shared = 0;
    for (const auto& [shape, elements] : w.shapes) {
      bool elsewhere = false;
      for (int other = 0; other < ipus_; ++other)
        if (other != id && !is_excluded(other))
          for (const auto& [s2, e2] : by_ipu[static_cast<std::size_t>(other)].shapes)
            elsewhere = elsewhere || s2 == shape;
      if (elsewhere) shared += elements;
    }
    return shared / w.elements;
  }

  const SplitCosts& costs_;
  const Split& split_;
  const Execution& ex_;
  const std::vector<std::pair<int, int>>& blocks_;  // per forward stage: its units, first and last
  const int ipus_, P_, L_, S_;                       // IPUs, forward stages, the loss stage, stages
  std::vector<int> stage_of_unit_;                   // the forward stage of each unit
};

ComposedPlan SplitCosts::compose(const Split& split, const Execution& ex) const {
  ComposedPlan out;
  out.blocks = stage_blocks(split);
  const Composer composer(*this, split, ex, out.blocks);
  Plan& plan = out.plan;
  plan.training = ex.training;
  plan.clock_hz = scenario_.hardware.ipu.clock_hz;
  plan.micro_batch_size = micro_batch_;
  plan.annotated = true;
  composer.set_stage_figures(plan);
  composer.add_copies(plan);
  composer.add_weights(plan);
  return out;
}

MemoryReport SplitCosts::memory(const ComposedPlan& composed, const Split& split, const MemorySettings& settings,
                               const std::vector<int>& stash_depth) const {
  MemoryReport report;
  const int ipus = static_cast<int>(split.layers_per_ipu.size());
  for (int id = 0; id < ipus; ++id) {
    MemorySettings s = settings;
    s.amp = split.amp.empty() ? 0 : split.amp[static_cast<std::size_t>(id)];
    const IpuFootprint f = footprint(ipu_blocks(composed.blocks, id, ipus, stash_depth), s);
    IpuMemory m;
    m.id = id;
    m.total_bytes = f.total_bytes;
    m.fullest_tile_bytes = f.tile_bytes;
    add_to_report(report, m, scenario_.hardware.ipu);
  }
  return report;
}


namespace {

// Every heap block costs its size plus the allocator's header and rounding (glibc: 16 bytes
// and 16-byte rounding); counted as 32 bytes more, whatever the block.
constexpr double kAllocation = 32;
// A std::map node beyond its key and value: three pointers, the colour, the allocation.
constexpr double kMapNode = 32 + kAllocation;

double string_bytes(const std::string& s) { return s.capacity() > 15 ? static_cast<double>(s.capacity()) + 1 + kAllocation : 0; }

template <typename T>
double vector_bytes(const std::vector<T>& v) {
  return v.capacity() == 0 ? 0 : static_cast<double>(v.capacity() * sizeof(T)) + kAllocation;
}

// The model's copy and its graph, as the table's constructor holds them while it builds.
double model_and_graph_bytes(const Model& m) {
  double bytes = static_cast<double>(sizeof(Model));
  for (const auto& [name, t] : m.tensors)
    bytes += kMapNode + static_cast<double>(sizeof(std::string) + sizeof(Tensor)) + 2 * string_bytes(name) +
             vector_bytes(t.shape);
  bytes += vector_bytes(m.ops);
  for (const Op& op : m.ops) {
    bytes += string_bytes(op.name) + string_bytes(op.type) + vector_bytes(op.inputs) + vector_bytes(op.outputs);
    for (const auto& t : op.inputs) bytes += string_bytes(t);
    for (const auto& t : op.outputs) bytes += string_bytes(t);
    // An attribute: its map node, key, the variant and what a list or string of it holds.
    bytes += static_cast<double>(op.attributes.size()) * (kMapNode + sizeof(std::string) + sizeof(AttributeValue) + 256);
  }
  // The graph: a vertex per op, an edge per tensor read (Boost's adjacency lists), the
  // producer and consumer maps keyed by tensor name, and the per-op vectors.
  double reads = 0;
  for (const Op& op : m.ops) reads += static_cast<double>(op.inputs.size());
  const double tensors = static_cast<double>(m.tensors.size()), ops = static_cast<double>(m.ops.size());
  bytes += ops * (64 + 4 * 8 + 2 * kAllocation) + reads * (48 + kAllocation);
  bytes += 2 * tensors * (kMapNode + sizeof(std::string) + 64 + sizeof(std::vector<std::size_t>)) + reads * 8;
  for (const auto& [name, t] : m.tensors) bytes += 2 * string_bytes(name);
  return bytes;
}

} // namespace

double SplitCosts::memory_bound(const Model& m, const LayerStructure& layers, std::size_t amps) {
  const double U = static_cast<double>(layers.names.size()) + 2;
  const double ops = static_cast<double>(m.ops.size()), tensors = static_cast<double>(m.tensors.size());
  const auto A = static_cast<double>(amps);
  double refs = 0, consumers = 0;
  for (const Op& op : m.ops) refs += static_cast<double>(op.inputs.size() + op.outputs.size());
  for (const Op& op : m.ops) consumers += static_cast<double>(op.inputs.size());
  double bytes = static_cast<double>(sizeof(SplitCosts));
  // The per-block tables, sized U x U at construction.
  bytes += U * U * (static_cast<double>(sizeof(Block)) + A * static_cast<double>(sizeof(BlockCost))) + 2 * kAllocation;
  // What each block lists: an outlined-code entry per op at most, a stash read and an entering
  // tensor per tensor reference of its ops at most. Block first..last holds unit u's ops for
  // each of the (u + 1)(U - u) blocks containing u.
  std::vector<double> per_unit(static_cast<std::size_t>(U), 0.0);
  for (std::size_t i = 0; i < m.ops.size() && i < layers.unit_of_op.size(); ++i)
    per_unit[static_cast<std::size_t>(layers.unit_of_op[i] + 1)] +=
        sizeof(std::pair<int, double>) + 2 * sizeof(int) * static_cast<double>(m.ops[i].inputs.size() + m.ops[i].outputs.size());
  for (std::size_t u = 0; u < per_unit.size(); ++u)
    bytes += per_unit[u] * static_cast<double>(u + 1) * (U - static_cast<double>(u));
  bytes += U * (U + 1) / 2 * 3 * kAllocation;
  // While a block is built: its ops, the read, entering and weight sets, last uses, deaths.
  bytes += ops * (8 + sizeof(std::vector<int>) + kAllocation) + 5 * refs * (kMapNode + 16);
  // Per op: its tensor lists, backward reads, code signature, tiles, unit, place in the
  // topological order, and a forward and backward cost per value; the signatures' map while
  // building (a signature names the op's type and shapes).
  bytes += ops * (2 * (sizeof(std::vector<int>) + kAllocation) + sizeof(BackwardReads) + sizeof(int) + sizeof(double) +
                  sizeof(int) + sizeof(std::size_t) + 2 * A * sizeof(OpCost) + kMapNode + 512) +
           refs * sizeof(int);
  // Per tensor: its record, consumers, the name-to-id map while building; the weights by unit.
  bytes += tensors * (sizeof(TensorInfo) + kAllocation + 2 * (kMapNode + sizeof(std::string) + 64)) +
           consumers * sizeof(int);
  bytes += 2 * U * sizeof(UnitWeights) + tensors * (sizeof(double) + sizeof(std::pair<int, double>) + 2 * kAllocation);
  bytes += U * (3 + 2) * sizeof(double) + 2 * ((U + 1) * sizeof(double) + kAllocation) + ops * sizeof(int) + tensors * (sizeof(int) + sizeof(std::vector<int>) + kAllocation);
  // The recomputation stashes: a block alone or with the other stage on its IPU (the heads
  // with IPU 0's block); the state's tile prefixes, by replica count.
  bytes += (U * (U + 1) / 2 + 2 * U) * (kMapNode + 32) + 4 * (U + 1) * sizeof(double) + 4 * kMapNode;
  // A cost model per value (its options and tables).
  bytes += A * 64 * 1024;
  return bytes + model_and_graph_bytes(m);
}

double SplitCosts::bytes_held() const {
  double bytes = static_cast<double>(sizeof(SplitCosts));
  bytes += vector_bytes(blocks_) + vector_bytes(block_costs_);
  for (const Block& b : blocks_) bytes += vector_bytes(b.code) + vector_bytes(b.stash_read) + vector_bytes(b.entering);
  bytes += vector_bytes(unit_of_op_) + vector_bytes(topological_order_) + vector_bytes(tensors_);
  for (const TensorInfo& t : tensors_) bytes += vector_bytes(t.consumers);
  for (const auto* lists : {&op_inputs_, &op_outputs_}) {
    bytes += vector_bytes(*lists);
    for (const auto& v : *lists) bytes += vector_bytes(v);
  }
  bytes += vector_bytes(op_reads_) + vector_bytes(op_signature_) + vector_bytes(op_tiles_);
  for (const auto* costs : {&forward_cost_, &backward_cost_}) {
    bytes += vector_bytes(*costs);
    for (const auto& v : *costs) bytes += vector_bytes(v);
  }
  bytes += vector_bytes(anchors_) + vector_bytes(unit_weights_) + vector_bytes(completing_);
  for (const auto* weights : {&unit_weights_, &completing_})
    for (const UnitWeights& w : *weights) bytes += vector_bytes(w.shapes) + vector_bytes(w.tensor_elements);
  bytes += vector_bytes(weight_prefix_) + vector_bytes(weight_tile_prefix_) + vector_bytes(state_bytes_prefix_);
  bytes += vector_bytes(shared_by_units_) + vector_bytes(crossing_) + vector_bytes(cut_bytes_[0]) + vector_bytes(cut_bytes_[1]);
  for (const auto& v : shared_by_units_) bytes += vector_bytes(v);
  bytes += static_cast<double>(recompute_stashes_.size()) * (kMapNode + 32);
  for (const auto& [shards, prefix] : state_tile_prefixes_) bytes += kMapNode + vector_bytes(prefix);
  return bytes;
}

} // namespace ipusim
