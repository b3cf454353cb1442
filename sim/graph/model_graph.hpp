#pragma once
// The model as a Boost.Graph DAG (a vertex per op, an edge per tensor from its
// producer to each consumer) with PopART's annotation rules checked and each op's
// IPU and pipeline stage resolved. Every rule failure is an InputError with its own
// rule id, naming the ops and tensors involved.
#include <boost/graph/adjacency_list.hpp>
#include <map>
#include <string>
#include <vector>

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
  std::vector<int> stage_of_op;      // pipelineStage, else virtualGraph (PopART's default)
  int stage_count = 1;               // annotated stages, before merging
  std::vector<std::string> anchors;  // tensors streamed to the host
};

ModelGraph build_graph(const Model& model);

} // namespace ipusim
