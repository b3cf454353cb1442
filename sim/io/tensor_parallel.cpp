// The shard of a model under tensor parallelism (sim/io/tensor_parallel.hpp). A tensor is
// either whole on every shard or split along one axis, counted from its end (1 = the last
// axis) so that a per-sample shape and a batched one agree. Decisions use the model's full
// shapes; the split axes are divided by the group size at the end.
#include "sim/io/tensor_parallel.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#include "sim/io/input_error.hpp"

namespace ipusim {

bool is_tensor_parallel_collective(const std::string& op_type) {
  return op_type == kTensorParallelAllReduce || op_type == kTensorParallelIdentity;
}

namespace {

const std::set<std::string> kReshapes{"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
const std::set<std::string> kNormalisingLastAxis{"LayerNorm", "LayerNormalization", "RMSNorm",
                                                 "SimplifiedLayerNormalization", "GroupNormalization"};
const std::set<std::string> kLosses{"NllLoss", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropy",
                                    "SoftmaxCrossEntropyLoss", "L1Loss", "MSELoss"};
const std::set<std::string> kReductions{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1",
                                        "ReduceL2", "ReduceSumSquare", "ReduceProd", "ReduceLogSumExp"};
const std::set<std::string> kSpatial{"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
                                     "BatchNormalization"};

std::int64_t dim_from_end(const std::vector<std::int64_t>& shape, int from_end) {
  const auto rank = static_cast<int>(shape.size());
  return from_end >= 1 && from_end <= rank ? shape[static_cast<std::size_t>(rank - from_end)] : 1;
}

// Ops in a topological order (file order among ready ones), whatever order the file lists them in.
std::vector<std::size_t> topological(const Model& m) {
  std::map<std::string, std::size_t> producer;
  for (const Op& op : m.ops)
    for (const auto& t : op.outputs) producer[t] = op.index;
  std::vector<std::vector<std::size_t>> readers(m.ops.size());
  std::vector<int> waiting(m.ops.size(), 0);
  for (const Op& op : m.ops)
    for (const auto& t : op.inputs)
      if (auto it = producer.find(t); it != producer.end() && it->second != op.index) {
        readers[it->second].push_back(op.index);
        ++waiting[op.index];
      }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < m.ops.size(); ++i)
    if (waiting[i] == 0) ready.push(i);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (auto r : readers[i])
      if (--waiting[r] == 0) ready.push(r);
  }
  return order;  // a cycle leaves ops out; build_graph reports it on the shard
}

class Sharder {
public:
  Sharder(const Model& model, int group, bool training, std::string scenario_file)
      : in_(model), t_(group), training_(training), scenario_file_(std::move(scenario_file)) {
    for (const Op& op : model.ops)
      if (op.type == "MatMul" || op.type == "Gemm")
        for (const auto& name : op.inputs) read_by_matmul_.insert(name);
    for (const Op& op : model.ops)
      if (op.type == "Gather" && !op.inputs.empty() && in_.tensor(op.inputs[0]).kind == TensorKind::Weight &&
          in_.tensor(op.inputs[0]).shape.size() == 2) {
        const std::int64_t rows = in_.tensor(op.inputs[0]).shape[0];
        if (rows >= kVocabularyRows || read_by_matmul_.count(op.inputs[0])) vocabulary_sizes_.insert(rows);
      }
  }

  // Shards op by op; when a split reaches an op that cannot take it, the op that made the split
  // is kept whole and the model sharded again (at most once per matmul and lookup).
  ShardedModel run() {
    const std::vector<std::size_t> order = topological(in_);
    for (;;) {
      try {
        attempt(order);
        break;
      } catch (const Blocked& b) {
        if (!whole_ops_.insert(b.origin).second)
          throw InputError(in_.file, "/ops", "tensor-parallel.unsupported-op", b.reason);
        kept_.push_back({b.origin, b.reason});
      }
    }
    for (std::size_t i = 0; i < out_.ops.size(); ++i) out_.ops[i].index = i;
    for (const auto& [name, from_end] : split_) {
      auto& shape = out_.tensors.at(name).shape;
      auto& size = shape[shape.size() - static_cast<std::size_t>(from_end)];
      size = (size + t_ - 1) / t_;  // a padded vocabulary's last shard is partly padding
    }
    return {std::move(out_), std::move(kept_)};
  }

private:
  // A split the op below cannot take, thrown to keep its origin whole.
  struct Blocked {
    std::string origin, reason;
  };

  void attempt(const std::vector<std::size_t>& order) {
    out_ = in_;
    out_.ops.clear();
    split_.clear();
    weight_split_.clear();
    whole_input_of_.clear();
    origin_.clear();
    weight_origin_.clear();
    for (std::size_t i : order) shard(in_.ops[i]);
  }

  const Model& in_;
  int t_;
  bool training_;
  std::string scenario_file_;
  Model out_;
  std::map<std::string, int> split_;         // tensor -> axis from the end it is split along
  std::map<std::string, int> weight_split_;  // weight -> its decided axis (0: whole)
  std::map<std::string, std::string> whole_input_of_;  // activation -> its TensorParallelIdentity output
  std::set<std::string> read_by_matmul_;
  std::set<std::int64_t> vocabulary_sizes_;  // rows of the vocabulary tables: padded when t does not divide them
  std::map<std::string, std::string> origin_;         // split tensor -> the op whose split it carries
  std::map<std::string, std::string> weight_origin_;  // split weight -> the op that split it
  std::string current_origin_;                        // of the op being sharded: its split inputs' origin
  std::set<std::string> whole_ops_;                   // matmuls and lookups kept whole (kept over attempts)
  std::vector<KeptWhole> kept_;

  const std::vector<std::int64_t>& shape(const std::string& name) const { return in_.tensor(name).shape; }
  int split_of(const std::string& name) const {
    auto it = split_.find(name);
    return it == split_.end() ? 0 : it->second;
  }
  bool is_weight(const std::string& name) const { return in_.tensor(name).kind == TensorKind::Weight; }

  // A split that reached this op from elsewhere: its origin is kept whole instead; a problem
  // with the op's own split (a weight the group does not divide) is the user's.
  [[noreturn]] void fail(const Op& op, const std::string& rule, const std::string& message) const {
    if (!current_origin_.empty()) throw Blocked{current_origin_, message};
    throw InputError(in_.file, in_.op_pointer(op), rule,
                     message + " (tensorParallel " + std::to_string(t_) + ", from " + scenario_file_ +
                         "; docs/tensor-parallel.md lists what is split and how)");
  }

  // A vocabulary axis the group does not divide is padded to the next multiple, as Megatron-LM
  // pads its vocabulary (--make-vocab-size-divisible-by): each shard holds ceil(V/t) rows.
  void mark_split(const Op& op, const std::string& name, int from_end) {
    const std::int64_t size = dim_from_end(shape(name), from_end);
    const bool padded_vocabulary = vocabulary_sizes_.count(size) != 0;
    if (from_end > static_cast<int>(shape(name).size()) || (size % t_ != 0 && !padded_vocabulary))
      fail(op, "tensor-parallel.indivisible",
           "op " + op.name + " splits tensor " + name + " along an axis of size " + std::to_string(size) +
               ", which the " + std::to_string(t_) + " shards cannot share evenly; choose a tensorParallel that divides it");
    split_[name] = from_end;
    origin_[name] = current_origin_.empty() ? op.name : current_origin_;
  }

  void decide_weight(const Op& op, const std::string& name, int from_end) {
    auto [it, fresh] = weight_split_.emplace(name, from_end);
    if (!fresh && it->second != from_end) {
      // A weight is split one way on every shard: keep whole whichever op split it, or this one.
      const std::string reason = "op " + op.name + " needs weight " + name + (from_end == 0 ? " whole" : " split") +
                                 " but an earlier op " + (it->second == 0 ? "reads it whole" : "split it another way");
      throw Blocked{it->second != 0 ? weight_origin_.at(name) : (current_origin_.empty() ? op.name : current_origin_),
                    reason};
    }
    if (fresh && from_end != 0) {
      mark_split(op, name, from_end);
      weight_origin_[name] = origin_.at(name);
    }
  }

  Op inserted(const Op& at, const std::string& type, const std::string& input, const std::string& output,
              double forward_elements, double gradient_elements) const {
    Op c;
    c.source_index = at.source_index;
    c.name = at.name + (type == kTensorParallelIdentity ? "/tp_whole_input" : "/tp_all_reduce");
    c.type = type;
    c.inputs = {input};
    c.outputs = {output};
    c.virtual_graph = at.virtual_graph;
    c.pipeline_stage = at.pipeline_stage;
    c.execution_phase = at.execution_phase;
    c.attributes["group"] = static_cast<std::int64_t>(t_);
    c.attributes["reducedElements"] = forward_elements;
    c.attributes["gradientReducedElements"] = gradient_elements;
    return c;
  }

  std::string add_tensor_like(const std::string& like, const std::string& name) {
    Tensor copy = in_.tensor(like);
    copy.name = name;
    copy.kind = TensorKind::Activation;
    out_.tensors[name] = copy;
    if (int s = split_of(like)) split_[name] = s;
    return name;
  }

  // The op's output `k` is a partial sum on each shard: the op writes it under a new name
  // and a TensorParallelAllReduce makes the whole tensor under the old one.
  void push_with_all_reduce(Op op, std::size_t k) {
    const std::string whole = op.outputs[k];
    op.outputs[k] = add_tensor_like(whole, whole + "/tp_partial");
    const double elements = static_cast<double>(in_.tensor(whole).elements());
    Op reduce = inserted(op, kTensorParallelAllReduce, op.outputs[k], whole, elements, 0);
    out_.ops.push_back(std::move(op));
    out_.ops.push_back(std::move(reduce));
  }

  // A column-parallel matmul reads a whole activation through a TensorParallelIdentity
  // (training: its gradient is a partial on each shard), one per activation.
  std::string whole_input(const Op& op, const std::string& name) {
    if (!training_ || in_.tensor(name).kind != TensorKind::Activation) return name;
    if (auto it = whole_input_of_.find(name); it != whole_input_of_.end()) return it->second;
    const std::string through = add_tensor_like(name, name + "/tp_whole");
    out_.ops.push_back(inserted(op, kTensorParallelIdentity, name, through, 0,
                                static_cast<double>(in_.tensor(name).elements())));
    whole_input_of_[name] = through;
    return through;
  }

  void push_split_work(Op op) {
    if (op.flops) *op.flops /= t_;
    if (op.backward_flops) *op.backward_flops /= t_;
    out_.ops.push_back(std::move(op));
  }

  void shard(const Op& op);
  void shard_matmul(const Op& op);
  void shard_by_matrix(const Op& op, int fa);                   // times a 2-D weight: column- or row-parallel
  void shard_activation_product(const Op& op, int fa, int fb);  // two activations
  void shard_gather(const Op& op);
  void shard_reshape(const Op& op, int from_end);
  void shard_transpose(const Op& op, int from_end);
  void shard_elementwise(const Op& op, int from_end);
  void shard_reduction(const Op& op, int from_end);
};

void Sharder::shard(const Op& op) {
  int from_end = 0;
  current_origin_.clear();
  for (const auto& name : op.inputs)
    if (!is_weight(name) && split_of(name) != 0) {
      if (current_origin_.empty()) current_origin_ = origin_.at(name);
      if (from_end != 0 && split_of(name) != from_end && op.type != "MatMul" && op.type != "Gemm")
        fail(op, "tensor-parallel.unsupported-op",
             "op " + op.name + " (" + op.type + ") reads tensors split along different axes");
      from_end = std::max(from_end, split_of(name));
    }
  if (op.type == "MatMul" || op.type == "Gemm") return shard_matmul(op);
  if (op.type == "Gather") return shard_gather(op);
  if (from_end == 0) {  // nothing split reaches it: whole on every shard
    for (const auto& name : op.inputs)
      if (is_weight(name)) decide_weight(op, name, 0);
    out_.ops.push_back(op);
    return;
  }
  if (kSpatial.count(op.type))
    fail(op, "tensor-parallel.unsupported-op",
         "op " + op.name + " (" + op.type + ") reads a split tensor; convolutions and pooling are not split");
  if (kReshapes.count(op.type)) return shard_reshape(op, from_end);
  if (op.type == "Transpose") return shard_transpose(op, from_end);
  if (kLosses.count(op.type) || kReductions.count(op.type)) return shard_reduction(op, from_end);
  if (kNormalisingLastAxis.count(op.type) && from_end == 1)
    fail(op, "tensor-parallel.unsupported-op",
         "op " + op.name + " (" + op.type + ") normalises over the split axis; only its rows may be split");
  shard_elementwise(op, from_end);
}

void Sharder::shard_matmul(const Op& op) {
  if (op.inputs.size() < 2) return out_.ops.push_back(op);
  const std::string& a = op.inputs[0];
  const std::string& b = op.inputs[1];
  const int fa = split_of(a), fb = split_of(b);
  if (is_weight(a)) {
    if (fb != 0) fail(op, "tensor-parallel.unsupported-op", "op " + op.name + " multiplies a weight by a split tensor");
    decide_weight(op, a, 0);
    return out_.ops.push_back(op);
  }
  if (is_weight(b) && shape(b).size() == 2) return shard_by_matrix(op, fa);
  if (is_weight(b)) {
    if (fa != 0) fail(op, "tensor-parallel.unsupported-op", "op " + op.name + " multiplies a split tensor by weight " +
                                                                 b + " of rank " + std::to_string(shape(b).size()));
    decide_weight(op, b, 0);
    return out_.ops.push_back(op);
  }
  shard_activation_product(op, fa, fb);
}

// Activation (split along `fa` from the end, 0: whole) times a 2-D weight: column-parallel where
// the activation is whole, row-parallel where its contracted axis is split.
void Sharder::shard_by_matrix(const Op& op, int fa) {
  const std::string& a = op.inputs[0];
  const std::string& b = op.inputs[1];
  const std::string& out = op.outputs.at(0);
  const auto& w = shape(b);
  const std::int64_t columns = dim_from_end(shape(out), 1);
  const bool trans_b = op.type == "Gemm" && op.attributes.count("transB") &&
                       std::get_if<std::int64_t>(&op.attributes.at("transB")) &&
                       std::get<std::int64_t>(op.attributes.at("transB")) != 0;
  // The weight's output-column axis, from the end: [K, N] stored as is (1) or transposed (2).
  const int column_axis = trans_b ? 2 : (w[1] == columns ? 1 : (w[0] == columns ? 2 : 0));
  if (column_axis == 0)
    fail(op, "tensor-parallel.unsupported-op",
         "op " + op.name + ": weight " + b + " has no axis of the output's width " + std::to_string(columns));
  const bool has_bias = op.inputs.size() > 2 && is_weight(op.inputs[2]);
  Op o = op;
  if (fa == 0 && whole_ops_.count(op.name)) {  // kept whole: what reads its output takes no split
    decide_weight(op, b, 0);
    if (has_bias) decide_weight(op, op.inputs[2], 0);
    return out_.ops.push_back(op);
  }
  if (fa == 0) {  // column-parallel
    decide_weight(op, b, column_axis);
    if (has_bias) decide_weight(op, op.inputs[2], 1);
    o.inputs[0] = whole_input(op, a);
    mark_split(op, out, 1);
    return push_split_work(std::move(o));
  }
  if (fa == 1) {  // row-parallel: the contracted axis is split, the output is a partial sum
    decide_weight(op, b, column_axis == 1 ? 2 : 1);
    if (has_bias) decide_weight(op, op.inputs[2], 0);
    if (o.flops) *o.flops /= t_;
    if (o.backward_flops) *o.backward_flops /= t_;
    return push_with_all_reduce(std::move(o), 0);
  }
  decide_weight(op, b, 0);  // rows (or a batch axis) split: the weight is read whole
  mark_split(op, out, fa);
  push_split_work(std::move(o));
}

// Two activations: per-head attention (both split along the same batch axis), rows of A, or
// columns of B.
void Sharder::shard_activation_product(const Op& op, int fa, int fb) {
  int out_axis = 0;
  if (fa != 0 && fa == fb && fa >= 3) out_axis = fa;
  else if (fa == 2 && fb == 0) out_axis = 2;
  else if (fa == 0 && fb == 1) out_axis = 1;
  else if (fa == 0 && fb == 0) return out_.ops.push_back(op);
  else
    fail(op, "tensor-parallel.unsupported-op",
         "op " + op.name + " multiplies activations split along axes " + std::to_string(fa) + " and " +
             std::to_string(fb) + " from the end; only per-head (batch-axis) products, row splits of the first "
             "and column splits of the second keep a split without gathering it");
  mark_split(op, op.outputs.at(0), out_axis);
  push_split_work(op);
}

void Sharder::shard_gather(const Op& op) {
  const std::string& table = op.inputs.at(0);
  const bool indices_split = op.inputs.size() > 1 && split_of(op.inputs[1]) != 0;
  if (indices_split || split_of(table) != 0)
    fail(op, "tensor-parallel.unsupported-op", "op " + op.name + " (Gather) looks up split indices or a split table");
  if (!is_weight(table) || shape(table).size() != 2) {
    out_.ops.push_back(op);
    return;
  }
  const bool vocabulary =
      (shape(table)[0] >= kVocabularyRows || read_by_matmul_.count(table) != 0) && whole_ops_.count(op.name) == 0;
  if (!vocabulary) {
    decide_weight(op, table, 0);
    out_.ops.push_back(op);
    return;
  }
  decide_weight(op, table, 2);  // rows: each shard holds a slice of the vocabulary
  push_with_all_reduce(op, 0);  // a row not in a shard's slice is zero there
}

void Sharder::shard_reshape(const Op& op, int from_end) {
  // The split axis keeps the elements before it: the output axis holding that boundary, or
  // the first one after it that the group divides (heads, not the q/k/v axis of [3, heads, d]).
  const auto& in = shape(op.inputs.at(0));
  const auto& out = shape(op.outputs.at(0));
  const std::size_t axis = in.size() - static_cast<std::size_t>(from_end);
  const std::int64_t before = std::accumulate(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(axis),
                                              std::int64_t{1}, std::multiplies<>());
  std::int64_t prefix = 1;
  std::size_t j = 0;
  while (j < out.size() && prefix * out[j] <= before) prefix *= out[j++];
  while (j < out.size() && out[j] % t_ != 0) ++j;
  if (j >= out.size())
    fail(op, "tensor-parallel.indivisible",
         "op " + op.name + " (" + op.type + ") reshapes a split tensor into " + op.outputs[0] +
             " with no axis the shards can share");
  mark_split(op, op.outputs[0], static_cast<int>(out.size() - j));
  push_split_work(op);
}

void Sharder::shard_transpose(const Op& op, int from_end) {
  const auto& in = shape(op.inputs.at(0));
  const std::size_t axis = in.size() - static_cast<std::size_t>(from_end);
  const auto* perm = op.attributes.count("perm") ? std::get_if<std::vector<std::int64_t>>(&op.attributes.at("perm"))
                                                 : nullptr;
  for (const auto& name : op.outputs) {
    const auto& out = shape(name);
    int out_from_end = 0;
    if (perm && op.outputs.size() == 1 && perm->size() == out.size()) {
      for (std::size_t k = 0; k < perm->size(); ++k)
        if ((*perm)[k] == static_cast<std::int64_t>(axis)) out_from_end = static_cast<int>(out.size() - k);
    } else {  // no permutation given: the output axis of the split axis's size
      for (std::size_t k = 0; k < out.size() && out_from_end == 0; ++k)
        if (out[k] == in[axis]) out_from_end = static_cast<int>(out.size() - k);
    }
    if (out_from_end == 0)
      fail(op, "tensor-parallel.unsupported-op",
           "op " + op.name + " (Transpose): the split axis of " + op.inputs[0] + " (size " + std::to_string(in[axis]) +
               ") has no axis of that size in " + name +
               " (a \"perm\" attribute would say where it goes); a group size that divides the attention heads "
               "keeps each head on one shard");
    mark_split(op, name, out_from_end);
  }
  push_split_work(op);
}

void Sharder::shard_reduction(const Op& op, int from_end) {
  const auto& in = shape(op.inputs.at(0));
  bool reduces_split_axis = kLosses.count(op.type) != 0;
  if (!reduces_split_axis) {
    const auto* axes =
        op.attributes.count("axes") ? std::get_if<std::vector<std::int64_t>>(&op.attributes.at("axes")) : nullptr;
    const auto rank = static_cast<std::int64_t>(in.size());
    const std::int64_t split_axis = rank - from_end;
    reduces_split_axis = axes == nullptr || axes->empty() ||
                         std::any_of(axes->begin(), axes->end(), [&](std::int64_t a) { return (a + rank) % rank == split_axis; });
  }
  Op o = op;
  if (o.flops) *o.flops /= t_;
  if (o.backward_flops) *o.backward_flops /= t_;
  if (reduces_split_axis) return push_with_all_reduce(std::move(o), 0);
  shard_elementwise(op, from_end);
}

void Sharder::shard_elementwise(const Op& op, int from_end) {
  Op o = op;
  for (const auto& name : op.inputs) {
    if (split_of(name) != 0) continue;
    const bool spans = dim_from_end(shape(name), from_end) > 1 && static_cast<int>(shape(name).size()) >= from_end;
    if (is_weight(name)) decide_weight(op, name, spans ? from_end : 0);
    else if (spans)
      fail(op, "tensor-parallel.unsupported-op",
           "op " + op.name + " (" + op.type + ") combines a split tensor with " + name +
               ", whole along the split axis; it would need gathering first");
  }
  const bool softmax_over_split = (op.type == "Softmax" || op.type == "LogSoftmax") && [&] {
    const auto* axis = op.attributes.count("axis") ? std::get_if<std::int64_t>(&op.attributes.at("axis")) : nullptr;
    const auto rank = static_cast<std::int64_t>(shape(op.inputs[0]).size());
    const std::int64_t a = axis ? (*axis + rank) % rank : rank - 1;
    return rank - a == from_end;
  }();
  if (softmax_over_split) {  // each row's maximum and sum are all-reduced (gradient: one sum)
    const double rows = static_cast<double>(in_.tensor(op.inputs[0]).elements()) /
                        static_cast<double>(dim_from_end(shape(op.inputs[0]), from_end));
    const std::string stats = add_tensor_like(op.inputs[0], op.inputs[0] + "/tp_row_stats");
    out_.ops.push_back(inserted(op, kTensorParallelAllReduce, op.inputs[0], stats, 2 * rows, rows));
    o.inputs[0] = stats;
  }
  for (const auto& name : op.outputs) mark_split(op, name, from_end);
  push_split_work(std::move(o));
}

} // namespace

ShardedModel shard_for_tensor_parallel(const Model& model, int group, bool training, const std::string& scenario_file) {
  if (group <= 1) return {model, {}};
  for (const Op& op : model.ops) model.check_declared(op);  // the graph has not checked it yet
  return Sharder(model, group, training, scenario_file).run();
}

} // namespace ipusim
