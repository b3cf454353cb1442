#pragma once
// The model as a Boost.Graph DAG (a vertex per op, an edge per tensor from its
// producer to each consumer) with PopART's annotation rules checked and each op's
// IPU and pipeline stage resolved. Every rule failure is an InputError with its own
// rule id, naming the ops and tensors involved. The rules PopART applies only when
// pipelining are recorded, not thrown: sharded runs do not need them.
#include <boost/graph/adjacency_list.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/io/input_error.hpp"
#include "sim/io/model.hpp"

namespace ipusim {

struct TensorEdge {
  std::string tensor;
};

using OpGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, TensorEdge>;

struct ModelGraph {
  OpGraph graph;                              // vertex i is model.ops[i]
  std::map<std::string, std::size_t> producer;  // activation -> producing op
  std::map<std::string, std::vector<std::size_t>> consumers;  // tensor -> consuming ops, in op order
  std::vector<std::size_t> topological_order;
  bool has_virtual_graphs = false;   // every op carries virtualGraph
  bool has_pipeline_stages = false;  // every op carries pipelineStage
  std::vector<int> ipu_of_op;        // 0 everywhere when unannotated
  std::vector<int> stage_of_op;      // the pipeline stage: pipelineStage, else virtualGraph (PopART's default)
  int stage_count = 1;               // distinct stage ids, before merging
  // Topological, the lower stage first among ready ops: the stages in order when they
  // obey the pipelining rules, else the data order (a sharded 0 -> 1 -> 0 model).
  std::vector<std::size_t> execution_order;
  // The first pipelining-only rule the model breaks (stage ids and their IPUs, consumed
  // before produced, a host input on several IPUs); pipelined runs are refused with it.
  std::optional<InputError> pipelining_refused;
  // executionPhase: the number of distinct phases when every op carries one (0: none do),
  // and the first of PopART's phase rules the annotations break (mixed, or an op reading a
  // tensor made in a later phase). PopART uses phases only under VirtualGraphMode::
  // ExecutionPhases and clears them otherwise; sharded and pipelined runs warn that they
  // ignore them (unused_phases_warning).
  int phase_count = 0;
  std::optional<InputError> phasing_refused;
  std::vector<std::string> anchors;  // tensors streamed to the host
};

ModelGraph build_graph(const Model& model);

} // namespace ipusim
