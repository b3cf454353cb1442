#pragma once
// Tensor parallelism the Megatron / PopXL way: each layer is sharded over a group of t IPUs
// that run in lockstep, so one shard's model, run on every IPU of the group, is what each
// IPU does. The transform below turns the model into that shard (docs/tensor-parallel.md):
// a matmul reading a whole activation is column-parallel (its weight split by output
// columns, its output split), one reading a split activation is row-parallel (weight split
// by input rows, output a partial sum, all-reduced), per-head attention and element-wise
// ops keep the split, a vocabulary table is split by rows (the lookup's partial rows
// all-reduced), a softmax or loss over a split axis all-reduces its statistics. Every other
// op runs whole on every shard. Two collectives are inserted, as PopXL names them:
//   TensorParallelAllReduce  (replicated_all_reduce_identical_grad_inputs): forward sums the
//                            shards' partials; its gradient is already whole on each shard.
//   TensorParallelIdentity   (replicated_all_reduce_identical_inputs): forward passes a whole
//                            activation to a column-parallel matmul; its gradient, a partial
//                            on each shard, is all-reduced.
// Both carry "group" (t) and "reducedElements" (per sample).
#include <string>
#include <vector>

#include "sim/io/model.hpp"

namespace ipusim {

inline constexpr const char* kTensorParallelAllReduce = "TensorParallelAllReduce";
inline constexpr const char* kTensorParallelIdentity = "TensorParallelIdentity";
bool is_tensor_parallel_collective(const std::string& op_type);

// A Gather table with at least this many rows is a vocabulary and is split by rows
// (Megatron's VocabParallelEmbedding; Graphcore's vocabularies are 30,522 to 50,400 rows),
// as is any table a matmul also reads (a tied LM head); smaller ones (position and type
// tables, at most 2,048 rows in Graphcore's models) stay whole.
inline constexpr std::int64_t kVocabularyRows = 16384;

// A matmul or lookup that would split its output but runs whole on every shard, because an op
// its split reaches cannot take it (a LayerNorm over the split axis, a weight split two ways,
// a head split the shapes cannot follow): Megatron likewise leaves such layers unsplit.
struct KeptWhole {
  std::string op, reason;
};

struct ShardedModel {
  Model model;
  std::vector<KeptWhole> kept_whole;  // in the order found
};

// The shard of `model` that each of `group` IPUs runs. `training` adds the identity
// collectives (their forward is free; only their gradient moves data). Throws InputError at
// the op (naming `scenario_file`) when `group` does not divide an axis an op splits itself
// (tensor-parallel.indivisible). group 1 returns the model unchanged.
ShardedModel shard_for_tensor_parallel(const Model& model, int group, bool training, const std::string& scenario_file);

} // namespace ipusim
