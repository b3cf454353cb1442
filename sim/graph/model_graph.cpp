#include "sim/graph/model_graph.hpp"

#include <algorithm>
#include <boost/graph/topological_sort.hpp>
#include <set>

#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"

namespace ipusim {

namespace {

std::string quote_name(const std::string& s) { return "\"" + s + "\""; }

std::string list_names(const std::vector<std::string>& names, std::size_t limit = 5) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + quote_name(names[i]);
  if (names.size() > limit) out += " and " + std::to_string(names.size() - limit) + " more";
  return out;
}

InputError op_error(const Model& m, const Op& op, const std::string& field, const std::string& rule,
                    const std::string& message) {
  return InputError(m.file, m.op_pointer(op) + (field.empty() ? "" : "/" + field), rule, message);
}

void check_tensor_references(const Model& m, ModelGraph& g) {
  std::set<std::string> op_names;
  for (const Op& op : m.ops) {
    if (!op_names.insert(op.name).second)
      throw op_error(m, op, "name", "op.duplicate-name", "another op is already named " + quote_name(op.name));
    m.check_declared(op);
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      auto& c = g.consumers[op.inputs[i]];
      if (c.empty() || c.back() != op.index) c.push_back(op.index);
    }
    for (std::size_t i = 0; i < op.outputs.size(); ++i) {
      const std::string& t = op.outputs[i];
      auto it = m.tensors.find(t);
      if (it->second.kind != TensorKind::Activation)
        throw op_error(m, op, "outputs/" + std::to_string(i), "tensor.produced-non-activation",
                       "op " + quote_name(op.name) + " writes " + quote_name(t) + ", which is declared as " +
                           tensor_kind_name(it->second.kind) + "; only activations are produced by ops");
      auto [pos, fresh] = g.producer.emplace(t, op.index);
      if (!fresh)
        throw op_error(m, op, "outputs/" + std::to_string(i), "tensor.multiple-producers",
                       "tensor " + quote_name(t) + " is written by both " + quote_name(m.ops[pos->second].name) + " and " +
                           quote_name(op.name));
    }
    if (op.outputs.empty())
      throw op_error(m, op, "outputs", "op.no-outputs", "op " + quote_name(op.name) + " has no outputs");
  }
  for (const auto& [name, t] : m.tensors) {
    if (t.kind == TensorKind::Activation && !g.producer.count(name))
      throw InputError(m.file, pointer_child("/tensors", name), "tensor.no-producer",
                       "activation " + quote_name(name) + " is never written by any op (declare it as an input or weight?)");
  }
}

void build_edges(const Model& m, ModelGraph& g) {
  g.graph = OpGraph(m.ops.size());
  for (const Op& op : m.ops)
    for (const std::string& t : op.inputs) {
      auto p = g.producer.find(t);
      if (p != g.producer.end()) boost::add_edge(p->second, op.index, TensorEdge{t}, g.graph);
    }
}

// Walks back along in-edges among ops left over by a failed topological sort until an op repeats.
[[noreturn]] void report_cycle(const Model& m, const ModelGraph& g) {
  std::vector<int> indegree(m.ops.size());
  for (std::size_t v = 0; v < m.ops.size(); ++v) indegree[v] = static_cast<int>(boost::in_degree(v, g.graph));
  std::vector<std::size_t> ready;
  for (std::size_t v = 0; v < m.ops.size(); ++v) if (!indegree[v]) ready.push_back(v);
  std::vector<bool> done(m.ops.size());
  while (!ready.empty()) {
    auto v = ready.back();
    ready.pop_back();
    done[v] = true;
    for (auto [e, end] = boost::out_edges(v, g.graph); e != end; ++e)
      if (--indegree[boost::target(*e, g.graph)] == 0) ready.push_back(boost::target(*e, g.graph));
  }
  std::size_t v = 0;
  while (done[v]) ++v;
  std::vector<std::size_t> path;
  std::vector<int> position(m.ops.size(), -1);
  while (position[v] < 0) {
    position[v] = static_cast<int>(path.size());
    path.push_back(v);
    for (auto [e, end] = boost::in_edges(v, g.graph); e != end; ++e) {
      auto u = boost::source(*e, g.graph);
      if (!done[u]) { v = u; break; }
    }
  }
  // path holds the cycle against the data flow, from path[position[v]] on; list it along the
  // data flow starting at the op the error points at.
  const auto start = static_cast<std::size_t>(position[v]);
  std::vector<std::string> cycle{m.ops[path[start]].name};
  for (auto i = path.size(); i-- > start + 1;) cycle.push_back(m.ops[path[i]].name);
  std::string text;
  for (const auto& name : cycle) text += quote_name(name) + " -> ";
  text += quote_name(cycle.front());
  throw op_error(m, m.ops[path[start]], "", "graph.cycle", "the ops form a cycle: " + text);
}

void sort_topologically(const Model& m, ModelGraph& g) {
  std::vector<std::size_t> reversed;
  try {
    boost::topological_sort(g.graph, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    report_cycle(m, g);
  }
  g.topological_order.assign(reversed.rbegin(), reversed.rend());
}

// All-or-nothing: either every op carries the annotation or none does.
std::optional<InputError> all_or_nothing(const Model& m, bool (*has)(const Op&), const std::string& annotation,
                                         const std::string& rule) {
  std::vector<std::string> with, without;
  for (const Op& op : m.ops) (has(op) ? with : without).push_back(op.name);
  if (with.empty() || without.empty()) return std::nullopt;
  return op_error(m, m.ops[std::find_if(m.ops.begin(), m.ops.end(), [&](const Op& o) { return !has(o); })->index], "",
                  rule,
                  annotation + " must be set on every op or on none: " + std::to_string(with.size()) +
                      " ops have it, but " + list_names(without) + " do not");
}

bool has_virtual_graph(const Op& op) { return op.virtual_graph.has_value(); }
bool has_pipeline_stage(const Op& op) { return op.pipeline_stage.has_value(); }
bool has_execution_phase(const Op& op) { return op.execution_phase.has_value(); }

// PopART checks phases only under VirtualGraphMode::ExecutionPhases (Ir::
// verifyExecutionPhaseSettings clears them otherwise): an op may not read a tensor made in
// a later phase (transforms/streamingmemory.cpp, StreamingMemory::verifyExecutionPhases).
// Ops without a phase among ops with one are refused here (PopART would infer theirs from
// their neighbours; ipusim asks for them, as for virtualGraph).
std::optional<InputError> phasing_rule_broken(const Model& m, const ModelGraph& g) {
  if (auto mixed = all_or_nothing(m, has_execution_phase, "executionPhase", "annotation.mixed-execution-phase"))
    return mixed;
  if (!has_execution_phase(m.ops.front())) return std::nullopt;
  for (const Op& op : m.ops)
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      const auto p = g.producer.find(op.inputs[i]);
      if (p == g.producer.end()) continue;
      const Op& producer = m.ops[p->second];
      if (*op.execution_phase < *producer.execution_phase)
        return op_error(m, op, "inputs/" + std::to_string(i), "annotation.phase-order",
                        "tensor " + quote_name(op.inputs[i]) + " is made by " + quote_name(producer.name) +
                            " in executionPhase " + std::to_string(*producer.execution_phase) + " but read by " +
                            quote_name(op.name) + " in the earlier phase " + std::to_string(*op.execution_phase) +
                            "; phases run in order, so an op reads only what earlier or the same phases made");
    }
  return std::nullopt;
}

// Stage ids are dense, 0..S-1: the first gap, found by walking the used ids (not 0..S-1: S may be huge).
std::optional<InputError> stage_gap(const Model& m, const ModelGraph& g,
                                    const std::map<int, std::size_t>& first_op_of_stage) {
  int expected = 0;
  for (const auto& [stage, op_index] : first_op_of_stage) {
    if (stage != expected) {
      const Op& op = m.ops[op_index];
      const std::string field = g.has_pipeline_stages ? "pipelineStage" : "virtualGraph";
      const std::string what = g.has_pipeline_stages ? "pipelineStage" : "virtualGraph (used as the stage)";
      const std::string gap = stage == expected + 1 ? "stage " + std::to_string(expected)
                                                    : "stages " + std::to_string(expected) + ".." +
                                                          std::to_string(stage - 1);
      return op_error(m, op, field, "annotation.stage-gap",
                      what + " ids must be dense from 0: op " + quote_name(op.name) + " is in stage " +
                          std::to_string(stage) + " but no op is in " + gap);
    }
    ++expected;
  }
  return std::nullopt;
}

// One stage lives on exactly one IPU.
std::optional<InputError> stage_on_several_ipus(const Model& m, const ModelGraph& g,
                                                const std::map<int, std::size_t>& first_op_of_stage) {
  for (const Op& op : m.ops) {
    const Op& first = m.ops[first_op_of_stage.at(g.stage_of_op[op.index])];
    if (g.ipu_of_op[op.index] != g.ipu_of_op[first.index])
      return op_error(m, op, "virtualGraph", "annotation.stage-on-several-ipus",
                      "stage " + std::to_string(g.stage_of_op[op.index]) + " is on virtualGraph " +
                          std::to_string(g.ipu_of_op[first.index]) + " (op " + quote_name(first.name) + ") and on " +
                          std::to_string(g.ipu_of_op[op.index]) + " (op " + quote_name(op.name) +
                          "); one stage lives on exactly one IPU");
  }
  return std::nullopt;
}

// A tensor may not be consumed in an earlier stage than the one producing it.
std::optional<InputError> consumed_before_produced(const Model& m, const ModelGraph& g) {
  for (const Op& op : m.ops)
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      auto p = g.producer.find(op.inputs[i]);
      if (p == g.producer.end()) continue;
      const Op& producer = m.ops[p->second];
      if (g.stage_of_op[op.index] < g.stage_of_op[producer.index])
        return op_error(m, op, "inputs/" + std::to_string(i), "annotation.consumed-before-produced",
                        "tensor " + quote_name(op.inputs[i]) + " is produced by " + quote_name(producer.name) +
                            " in stage " + std::to_string(g.stage_of_op[producer.index]) + " but consumed by " +
                            quote_name(op.name) + " in the earlier stage " + std::to_string(g.stage_of_op[op.index]));
    }
  return std::nullopt;
}

// A host input stream feeds ops on one IPU only.
std::optional<InputError> input_on_several_ipus(const Model& m, const ModelGraph& g) {
  for (const auto& [name, users] : g.consumers) {
    if (m.tensor(name).kind != TensorKind::Input) continue;
    for (auto u : users)
      if (g.ipu_of_op[u] != g.ipu_of_op[users.front()])
        return op_error(m, m.ops[u], "", "annotation.input-on-several-ipus",
                        "host input " + quote_name(name) + " feeds " + quote_name(m.ops[users.front()].name) +
                            " on IPU " + std::to_string(g.ipu_of_op[users.front()]) + " and " +
                            quote_name(m.ops[u].name) + " on IPU " + std::to_string(g.ipu_of_op[u]) +
                            "; a host stream feeds one IPU only when pipelining (copy it on the device instead)");
  }
  return std::nullopt;
}

// PopART checks these only with enablePipelining (Ir::verifyPipelineSettings clears every
// pipelineStage otherwise; transforms/pipeline.cpp checks the rest), so they refuse
// pipelined runs only: the first one broken, in PopART's order.
std::optional<InputError> pipelining_rule_broken(const Model& m, const ModelGraph& g) {
  if (auto mixed = all_or_nothing(m, has_pipeline_stage, "pipelineStage", "annotation.mixed-pipeline-stage"))
    return mixed;
  if (g.has_pipeline_stages && !g.has_virtual_graphs) {
    const Op& op = m.ops.front();
    return op_error(m, op, "pipelineStage", "annotation.stage-without-virtual-graph",
                    "pipelineStage is set but virtualGraph is not; a stage lives on an IPU, so every op needs a "
                    "virtualGraph too (op " + quote_name(op.name) + ")");
  }
  std::map<int, std::size_t> first_op_of_stage;
  for (const Op& op : m.ops) first_op_of_stage.emplace(g.stage_of_op[op.index], op.index);
  if (auto gap = stage_gap(m, g, first_op_of_stage)) return gap;
  if (auto spread = stage_on_several_ipus(m, g, first_op_of_stage)) return spread;
  if (auto early = consumed_before_produced(m, g)) return early;
  return input_on_several_ipus(m, g);
}

void resolve_annotations(const Model& m, ModelGraph& g) {
  if (auto mixed = all_or_nothing(m, has_virtual_graph, "virtualGraph", "annotation.mixed-virtual-graph")) throw *mixed;
  g.has_virtual_graphs = has_virtual_graph(m.ops.front());
  g.has_pipeline_stages = std::all_of(m.ops.begin(), m.ops.end(), has_pipeline_stage);
  g.ipu_of_op.assign(m.ops.size(), 0);
  g.stage_of_op.assign(m.ops.size(), 0);
  for (const Op& op : m.ops) {
    if (g.has_virtual_graphs) g.ipu_of_op[op.index] = static_cast<int>(*op.virtual_graph);
    g.stage_of_op[op.index] = g.has_pipeline_stages ? static_cast<int>(*op.pipeline_stage) : g.ipu_of_op[op.index];
  }
  g.stage_count = static_cast<int>(std::set<int>(g.stage_of_op.begin(), g.stage_of_op.end()).size());
  g.pipelining_refused = pipelining_rule_broken(m, g);
  g.phasing_refused = phasing_rule_broken(m, g);
  if (!g.phasing_refused && has_execution_phase(m.ops.front())) {
    std::set<std::int64_t> phases;
    for (const Op& op : m.ops) phases.insert(*op.execution_phase);
    g.phase_count = static_cast<int>(phases.size());
  }
}

// The order ops run in: topological, taking among the ready ops the one of the lowest
// stage (then the earliest in topological_order). When the stages obey the pipelining
// rules this lists the stages one after another; otherwise (a sharded model going back
// to an earlier IPU) the data order wins.
void order_execution(const Model& m, ModelGraph& g) {
  std::vector<std::size_t> position(m.ops.size());
  for (std::size_t i = 0; i < g.topological_order.size(); ++i) position[g.topological_order[i]] = i;
  std::vector<std::size_t> waiting(m.ops.size());
  std::set<std::pair<int, std::size_t>> ready;  // (stage, topological position)
  for (std::size_t v = 0; v < m.ops.size(); ++v) {
    waiting[v] = boost::in_degree(v, g.graph);
    if (!waiting[v]) ready.emplace(g.stage_of_op[v], position[v]);
  }
  while (!ready.empty()) {
    const std::size_t v = g.topological_order[ready.begin()->second];
    ready.erase(ready.begin());
    g.execution_order.push_back(v);
    for (auto [e, end] = boost::out_edges(v, g.graph); e != end; ++e) {
      const std::size_t w = boost::target(*e, g.graph);
      if (--waiting[w] == 0) ready.emplace(g.stage_of_op[w], position[w]);
    }
  }
}

void resolve_anchors(const Model& m, ModelGraph& g) {
  for (std::size_t i = 0; i < m.anchors.size(); ++i)
    if (!g.producer.count(m.anchors[i]))
      throw InputError(m.file, "/anchors/" + std::to_string(i), "tensor.bad-anchor",
                       "anchor " + quote_name(m.anchors[i]) + " is not an activation produced by an op");
  g.anchors = m.anchors;
  if (!g.anchors.empty()) return;
  for (const auto& [name, op] : g.producer)  // graph outputs: produced, never consumed
    if (!g.consumers.count(name)) g.anchors.push_back(name);
}

} // namespace

ModelGraph build_graph(const Model& model) {
  if (model.ops.empty()) throw InputError(model.file, "/ops", "model.empty", "the model has no ops");
  ModelGraph g;
  check_tensor_references(model, g);
  build_edges(model, g);
  sort_topologically(model, g);
  resolve_annotations(model, g);
  order_execution(model, g);
  resolve_anchors(model, g);
  return g;
}

} // namespace ipusim
