#include "sim/io/hardware_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <sys/stat.h>

#include "sim/io/json_reader.hpp"
#include "sim/io/tile_architecture_loader.hpp"

namespace ipusim {

namespace {

IpuSpec read_ipu(ObjectReader r) {
  IpuSpec ipu;
  ipu.name = r.required_string("name");
  ipu.tiles = r.required_int("tiles");
  ipu.clock_hz = r.required_number("clockHz");
  {
    ObjectReader f = r.object("flopsPerCyclePerTile");
    ipu.flops_per_cycle_per_tile_f16 = f.required_number("float16");
    ipu.flops_per_cycle_per_tile_f32 = f.required_number("float32");
    f.finish();
  }
  ipu.sram_bytes_per_tile = r.required_int("sramBytesPerTile");
  ipu.exchange_bytes_per_cycle_per_tile = r.required_number("exchangeBytesPerCyclePerTile");
  ipu.sync_cycles = r.required_number("syncCycles");
  ipu.min_elements_per_tile = r.optional_int("minElementsPerTile", ipu.min_elements_per_tile);
  ipu.code_bytes_per_op = r.required_number("codeBytesPerOp");
  ObjectReader eff = r.object("efficiency");
  const Json& eff_json = r.required_value("efficiency");
  for (auto it = eff_json.begin(); it != eff_json.end(); ++it) {
    const double e = eff.required_number(it.key());
    if (it.key() == "default") ipu.default_efficiency = e;
    else ipu.efficiency[it.key()] = e;
  }
  if (!eff.has("default")) throw r.error("efficiency", "json.missing-key", "efficiency needs a \"default\" entry");
  eff.finish();
  if (r.has("tileArchitecture")) ipu.tile = read_tile_architecture(r.object("tileArchitecture"));
  r.finish();
  return ipu;
}

LinkSpec read_link(ObjectReader r, int ipu_count) {
  LinkSpec link;
  auto ends = r.int_list("ipus", true);
  if (ends.size() != 2 || ends[0] == ends[1])
    throw r.error("ipus", "link.bad-ends",
                  "a link joins two different IPUs: give [a, b], got " + json_excerpt(r.required_value("ipus")));
  for (auto e : ends)
    if (e < 0 || e >= ipu_count)
      throw r.error("ipus", "link.bad-ends",
                    "IPU " + std::to_string(e) + " does not exist (ipuCount is " + std::to_string(ipu_count) + ")");
  link.a = static_cast<int>(ends[0]);
  link.b = static_cast<int>(ends[1]);
  link.name = r.optional_string("name", "");
  link.bandwidth_bytes_per_s = r.required_number("bandwidthBytesPerSecond");
  link.latency_s = r.required_number("latencySeconds");
  r.finish();
  return link;
}

// "sharedBy": how many consecutive IPUs one resource (a host link, a Streaming Memory) serves.
int shared_by(ObjectReader& r, int ipu_count) {
  const auto n = r.optional_int("sharedBy", 1);  // at least 1 by its range line
  if (ipu_count % n != 0)
    throw r.error("sharedBy", "link.bad-sharing",
                  "sharedBy must divide ipuCount (" + std::to_string(ipu_count) + "), got " + std::to_string(n));
  return static_cast<int>(n);
}

// A source entry must name a figure that exists, so citations cannot drift from the values.
void check_sources(const Json& document, ObjectReader& r, const std::string& origin,
                   std::map<std::string, std::string>& out) {
  const Json& sources = r.required_value("sources");
  if (!sources.is_object()) throw r.error("sources", "json.type", "expected an object of \"/json/pointer\": \"citation\"");
  for (auto it = sources.begin(); it != sources.end(); ++it) {
    const std::string where = pointer_child("/sources", it.key());
    if (!it.value().is_string() || it.value().get<std::string>().empty())
      throw InputError(origin, where, "sources.bad-citation", "a citation must be a non-empty string");
    Json::json_pointer pointer;
    try {
      pointer = Json::json_pointer(it.key());
    } catch (const Json::exception&) {
      throw InputError(origin, where, "sources.bad-pointer", "\"" + it.key() + "\" is not a JSON pointer");
    }
    bool exists = false;
    try {
      exists = document.contains(pointer);
    } catch (const Json::exception&) {  // an array index that is not a number
    }
    if (!exists)
      throw InputError(origin, where, "sources.unknown-field",
                       "cites \"" + it.key() + "\", which is not a field of this config");
    out[it.key()] = it.value().get<std::string>();
  }
}

} // namespace

namespace {

// Objects merge key by key; anything else in the derived document replaces the base's.
void merge_into(Json& base, const Json& derived) {
  if (!base.is_object() || !derived.is_object()) {
    base = derived;
    return;
  }
  for (auto it = derived.begin(); it != derived.end(); ++it) {
    if (base.contains(it.key())) merge_into(base[it.key()], it.value());
    else base[it.key()] = it.value();
  }
}

// A file in an "extends" chain, by identity: a symlink or a second name for a file
// already in the chain is the same file, whatever its path says.
struct ChainFile {
  std::string path;
  std::uint64_t device = 0, inode = 0;
  bool known = false;  // false for an inline config
};

constexpr std::size_t kMaxExtendsDepth = 32;

// "extends": "other.json" (relative to this file) makes a config a set of overrides on another.
Json resolve_extends(const Json& document, const std::string& origin, std::vector<ChainFile>& chain) {
  if (!document.is_object() || !document.contains("extends")) return document;
  const Json& target = document["extends"];
  if (!target.is_string())
    throw InputError(origin, "/extends", "json.type", "\"extends\" names the config file this one derives from");
  const std::string file_part = origin.substr(0, origin.find('#'));
  std::filesystem::path base_path(target.get<std::string>());
  if (base_path.is_relative()) base_path = std::filesystem::path(file_part).parent_path() / base_path;
  const std::string base_file = base_path.lexically_normal().string();
  if (chain.size() > kMaxExtendsDepth)
    throw InputError(origin, "/extends", "config.extends-cycle",
                     "the \"extends\" chain is longer than " + std::to_string(kMaxExtendsDepth) + " files");
  const ParsedFile base = read_parsed_file(base_file, origin, "/extends");
  for (const ChainFile& f : chain)
    if (f.path == base_file || (f.known && f.device == base.device && f.inode == base.inode))
      throw InputError(origin, "/extends", "config.extends-cycle",
                       "\"" + base_file + "\" extends itself through " + std::to_string(chain.size()) + " file(s)" +
                           (f.path == base_file ? "" : " (it is \"" + f.path + "\" by another name)"));
  chain.push_back({base_file, base.device, base.inode, true});
  Json merged = resolve_extends(base.document, base_file, chain);
  Json own = document;
  own.erase("extends");
  merge_into(merged, own);
  return merged;
}

} // namespace

Json resolve_config_extends(const Json& document, const std::string& origin) {
  ChainFile self{origin.substr(0, origin.find('#')), 0, 0, false};
  struct stat info {};
  if (origin.find('#') == std::string::npos && ::stat(self.path.c_str(), &info) == 0) {
    self.device = static_cast<std::uint64_t>(info.st_dev);
    self.inode = static_cast<std::uint64_t>(info.st_ino);
    self.known = true;
  }
  std::vector<ChainFile> chain{self};
  return resolve_extends(document, origin, chain);
}

HardwareConfig hardware_from_json(const Json& raw_document, const std::string& origin) {
  const Json document = resolve_config_extends(raw_document, origin);
  ObjectReader root(document, origin, "", Format::Config);
  HardwareConfig hw;
  hw.file = origin;
  hw.name = root.required_string("name");
  root.optional_string("description", "");
  hw.ipu = read_ipu(root.object("ipu"));
  hw.ipu_count = static_cast<int>(root.required_int("ipuCount"));
  const auto rack_ipus = root.optional_int("rackIpus", hw.ipu_count);
  if (hw.ipu_count % rack_ipus != 0)
    throw root.error("rackIpus", "link.bad-sharing",
                     "rackIpus (the IPUs of one IPU-Link domain, a POD64 rack) must divide ipuCount (" +
                         std::to_string(hw.ipu_count) + "), got " + std::to_string(rack_ipus));
  hw.rack_ipus = static_cast<int>(rack_ipus);
  hw.sync_latency_per_hop_s = root.required_number("syncLatencyPerHopSeconds");
  if (root.has("syncSeconds")) hw.fixed_sync_s = root.required_number("syncSeconds");
  hw.price_per_ipu_hour = root.optional_number("pricePerIpuHour", hw.price_per_ipu_hour);
  const Json& links = root.required_value("links");
  if (!links.is_array()) throw root.error("links", "json.type", "expected an array of links");
  std::set<std::pair<int, int>> seen;
  for (std::size_t i = 0; i < links.size(); ++i) {
    LinkSpec link = read_link(ObjectReader(links[i], origin, pointer_child("/links", i), Format::Config), hw.ipu_count);
    if (!seen.insert({std::min(link.a, link.b), std::max(link.a, link.b)}).second)
      throw InputError(origin, pointer_child("/links", i), "link.duplicate",
                       "IPUs " + std::to_string(link.a) + " and " + std::to_string(link.b) +
                           " are already joined; give one link with the combined bandwidth");
    hw.links.push_back(link);
  }
  {
    ObjectReader host = root.object("hostLink");
    hw.host_link.bandwidth_bytes_per_s = host.required_number("bandwidthBytesPerSecond");
    hw.host_link.latency_s = host.required_number("latencySeconds");
    hw.host_link.shared_by = shared_by(host, hw.ipu_count);
    hw.host_link.gateway_bandwidth_bytes_per_s =
        host.optional_number("gatewayBandwidthBytesPerSecond", hw.host_link.gateway_bandwidth_bytes_per_s);
    hw.host_link.run_overhead_s = host.optional_number("runOverheadSeconds", hw.host_link.run_overhead_s);
    host.finish();
  }
  if (root.has("streamingMemory")) {
    ObjectReader sm = root.object("streamingMemory");
    hw.streaming_memory.present = true;
    hw.streaming_memory.bandwidth_bytes_per_s = sm.required_number("bandwidthBytesPerSecond");
    hw.streaming_memory.latency_s = sm.required_number("latencySeconds");
    hw.streaming_memory.shared_by = shared_by(sm, hw.ipu_count);
    sm.finish();
  }
  check_sources(document, root, origin, hw.sources);
  root.finish();
  return hw;
}

HardwareConfig load_hardware(const std::string& path) { return hardware_from_json(read_json_file(path), path); }

} // namespace ipusim
