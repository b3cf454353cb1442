#pragma once
// An IPU system as read from configs/*.json: one IPU model, how many IPUs, the
// IPU-Links between them and the host link. Every figure is in SI units.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/io/model.hpp"

namespace ipusim {

// What the shape-aware cost model ("poplibs") needs to know about a tile, beyond its peak:
// the AMP (accumulating matrix product) units that run matmuls and convolutions, the
// worker threads and vector width that run everything else, and the on-chip exchange.
// Values and their sources live in configs/ipus/*.json under "ipu"/"tileArchitecture".
struct TileArchitecture {
  int worker_contexts = 6;              // barrel-scheduled worker threads per tile
  int data_path_bytes = 8;              // one load/store and one vector op: f16v4, f32v2
  // AMP: per cycle each conv unit multiplies `input_load_elements` inputs with its weights;
  // a chain of `chain_length` loads makes one input-channel group.
  int amp_conv_units_f16 = 16, amp_conv_units_f32 = 8;
  int amp_input_load_elements_f16 = 4, amp_input_load_elements_f32 = 2;
  int amp_chain_length = 4;
  double amp_weight_load_bytes_per_cycle = 16;
  int tiles_per_exchange_bus = 2;       // tile pairs receive a broadcast at twice the rate
  double memcpy_bytes_per_cycle = 8;    // on-tile copies
  double compute_set_sync_cycles = 90;  // every compute set ends in an IPU-wide sync
  double exchange_overhead_cycles = 100;  // fixed cost of an exchange phase, however small
  double min_bytes_per_tile = 128;      // Poplar's linear mapping puts no less than this on a tile

  int conv_units(DType dtype) const { return dtype == DType::Float32 ? amp_conv_units_f32 : amp_conv_units_f16; }
  int input_load_elements(DType dtype) const {
    return dtype == DType::Float32 ? amp_input_load_elements_f32 : amp_input_load_elements_f16;
  }
  // Input channels one AMP pass consumes (the weights per conv unit).
  int input_channels_per_group(DType dtype) const { return input_load_elements(dtype) * amp_chain_length; }
  // Elements of `dtype` in one vector (data path) operation.
  int vector_width(DType dtype) const { return data_path_bytes / static_cast<int>(dtype_bytes(dtype)); }
};

struct IpuSpec {
  std::string name;
  std::int64_t tiles = 0;
  double clock_hz = 0;
  double flops_per_cycle_per_tile_f16 = 0;
  double flops_per_cycle_per_tile_f32 = 0;
  std::int64_t sram_bytes_per_tile = 0;
  double exchange_bytes_per_cycle_per_tile = 0;
  double sync_cycles = 0;               // on-chip sync paid once per superstep (per op)
  std::int64_t min_elements_per_tile = 1;  // smallest slice of an op's output worth a tile
  double code_bytes_per_op = 0;         // code and control an op leaves on each tile it uses
  double default_efficiency = 1;
  std::map<std::string, double> efficiency;  // by op type
  TileArchitecture tile;

  // Integer and bool work runs at the float32 rate.
  double flops_per_cycle_per_tile(DType dtype) const {
    return dtype == DType::Float16 ? flops_per_cycle_per_tile_f16 : flops_per_cycle_per_tile_f32;
  }
  double efficiency_for(const std::string& op_type) const {
    auto it = efficiency.find(op_type);
    return it == efficiency.end() ? default_efficiency : it->second;
  }
};

struct LinkSpec {
  std::string name;  // optional label, e.g. "gw-link0"
  int a = 0, b = 0;
  double bandwidth_bytes_per_s = 0;  // per direction (links are full duplex)
  double latency_s = 0;
};

struct HostLinkSpec {
  double bandwidth_bytes_per_s = 0;  // per link, per direction
  double latency_s = 0;
  int shared_by = 1;                 // consecutive IPUs behind one link (4: an M2000's IPU-Gateway)
  // An IPU-Gateway's own link to each IPU (0: none, the host link reaches the IPU directly).
  // Streams prefetched into the gateway's buffer cross only this leg while the IPU waits.
  double gateway_bandwidth_bytes_per_s = 0;
  // The host's turn between two runs of the device program (a session.run, or PopART's
  // optimizerFromHost program): every IPU waits this long each time.
  double run_overhead_s = 0;
};

// Off-chip DDR (IPU-M2000 Streaming Memory) that optimizer state may live in.
struct StreamingMemorySpec {
  bool present = false;
  double bandwidth_bytes_per_s = 0;  // of one memory, shared by its IPUs' reads and writes
  double latency_s = 0;
  int shared_by = 1;                 // consecutive IPUs behind one memory (4: an IPU-M2000's DDR)
};

struct HardwareConfig {
  std::string file;
  std::string name;
  IpuSpec ipu;
  int ipu_count = 0;
  // What an IPU-hour costs (pricePerIpuHour, in the config's own currency): 0 = not stated,
  // then no cost per token is given.
  double price_per_ipu_hour = 0;
  int rack_ipus = 0;  // IPUs of one IPU-Link domain (a POD64 rack); collectives reduce hierarchically across racks
  double sync_latency_per_hop_s = 0;
  std::vector<LinkSpec> links;
  HostLinkSpec host_link;
  StreamingMemorySpec streaming_memory;
  std::map<std::string, std::string> sources;  // JSON pointer of a figure -> where it comes from

  double fixed_sync_s = -1;  // when >= 0, every inter-IPU sync costs this, whatever the IPU count

  // Graphcore's IPU model: 15 ns a hop, hops = 1 + IPUs/4, there and back.
  double sync_seconds(int ipus_taking_part) const {
    if (fixed_sync_s >= 0) return fixed_sync_s;
    return 2.0 * (1 + ipus_taking_part / 4) * sync_latency_per_hop_s;
  }
};

} // namespace ipusim
