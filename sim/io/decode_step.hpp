#pragma once
// A decoder's model at another sequence length, and its decode step: the model that
// generates one token with a KV cache of `context` tokens (docs/generation.md). Both are
// found from the model's own shapes: its attention products (a MatMul of two activations,
// scores [.., S, S] = Q K^T and context = P V) give the sequence length S; the keys and
// values they read, back through layout ops (Transpose, Reshape, Expand, ...) to the new
// token's K and V, are what the cache holds.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/io/model.hpp"

namespace ipusim {

struct SequenceLayout {
  std::int64_t sequence = 0;          // S: the model's sequence length
  std::set<std::string> cached;       // tensors read over the whole context (the KV cache's side)
  // The new token's keys and values, by the IPU reading them: what the cache appends each
  // token, in elements per token per sample.
  std::map<int, double> cache_elements_per_token_by_ipu;
  DType cache_dtype = DType::Float16;
};

// The sequence length S of the model's attention (scores [.., S, S]); none without attention.
std::optional<std::int64_t> attention_sequence_length(const Model& model);

// Refused (InputError naming `origin`, rule generation.no-attention or
// generation.ambiguous-sequence) for a model without causal attention products, or whose S
// is also one of its weights' dimensions or its heads' width (S could not be told apart).
SequenceLayout find_sequence_layout(const Model& model, const std::string& origin);

// The model with every sequence dimension S made `sequence` (a prompt's prefill, or the
// whole prefix recomputed when there is no KV cache).
Model resequenced_model(const Model& model, const SequenceLayout& layout, std::int64_t sequence);

// One generated token with `context` tokens cached: every S becomes 1 (one query), except in
// the cached keys and values and the scores' last dimension, which become `context`.
Model decode_step_model(const Model& model, const SequenceLayout& layout, std::int64_t context);

} // namespace ipusim
