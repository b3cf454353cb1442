#pragma once
// Quantised weights in a generation (docs/generation.md, "Quantised weights"): which weights a
// format compresses (the linear layers': two-dimensional weights read only by MatMuls; an
// embedding, a tied head and the norms stay float16), the bytes they then hold, and the time a
// pass of one token spends decompressing them to float16 on the tiles before its matmuls
// (PopXL decompresses each weight right before its matmul, every call; the AMP multiplies
// float16).
#include <map>
#include <string>

#include "sim/io/hardware.hpp"
#include "sim/io/model.hpp"
#include "sim/io/scenario.hpp"

namespace ipusim {

struct QuantisedIpu {
  double weights = 0;                // elements of the compressed weights on this IPU
  double float16_bytes = 0;          // what they hold uncompressed
  double stored_bytes = 0;           // compressed: packed values, scales (and biases)
  double largest_float16_bytes = 0;  // the largest decompressed weight: a temporary of its matmul
  double dequantise_s = 0;           // decompressing every one of them once
};

// Per IPU (virtualGraph) of `model` (one IPU's shard under tensor parallelism): nothing for
// float16. Refused (InputError at /generation/groupSize, rule generation.group-size) when an
// int4 group does not divide a weight's contracted dimension, as PopXL refuses it.
std::map<int, QuantisedIpu> quantise_weights(const Model& model, const Generation& generation, const IpuSpec& ipu,
                                             const Execution& execution, const std::string& origin);

} // namespace ipusim
