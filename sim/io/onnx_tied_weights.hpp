#pragma once
// Tied weights in ONNX exports. A language model whose head shares the token embedding
// (GPT-2, BERT's MLM head) reads one weight twice; PyTorch's exporter writes the head's read
// as a Transpose (or Identity) node on that weight, or, with constant folding, folds it into
// an initializer of its own holding the weight's transposed values. Counted as is, the
// weight would be held twice and its two readers allowed on different IPUs. These copies are
// found here and their readers made to read the weight itself (a MatMul or Gemm then reads
// it with transB), so the weight is counted once and the rule that a weight lives on one IPU
// applies (docs/formats.md, "ONNX models").
#include <map>
#include <set>
#include <string>

#include "sim/io/onnx_proto.hpp"

namespace ipusim {

struct WeightCopy {
  std::string weight;       // the initializer the copy repeats
  bool transposed = false;  // the copy is its transpose: readers contract over its first dimension
};

// An Identity node reading a float initializer: how PyTorch's exporter writes a parameter
// it merged into another (its de-duplication of initializers: by identity, and in an
// evaluation-mode export by equal values, so every RMSNorm weight starting at 1 becomes one).
// The output is named as the parameter was; the importer makes it the weight it was.
bool separated_weight(const onnx::GraphProto& graph, const onnx::NodeProto& node);

// Copies of float initializers, by tensor name: initializers holding another's transpose
// (never equal values alone: two parameters may be equal by chance or by initialisation),
// and outputs of Transpose/Identity nodes reading one; a transposed copy only where every reader is a MatMul or Gemm reading it as its second input. The
// nodes making the copies are added to `dropped`.
std::map<std::string, WeightCopy> find_weight_copies(const onnx::GraphProto& graph,
                                                     const std::set<std::string>& constants, std::set<int>& dropped);

} // namespace ipusim
