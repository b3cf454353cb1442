#include "sim/io/hardware_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "sim/io/json_reader.hpp"
#include "sim/io/tile_architecture_loader.hpp"

namespace ipusim {

namespace {

IpuSpec read_ipu(ObjectReader r) {
  IpuSpec ipu;
  ipu.name = r.required_string("name");
  ipu.tiles = r.required_int("tiles");
  require_positive(r, "tiles", static_cast<double>(ipu.tiles));
  ipu.clock_hz = require_positive(r, "clockHz", r.required_number("clockHz"));
  {
    ObjectReader f = r.object("flopsPerCyclePerTile");
    ipu.flops_per_cycle_per_tile_f16 = require_positive(f, "float16", f.required_number("float16"));
    ipu.flops_per_cycle_per_tile_f32 = require_positive(f, "float32", f.required_number("float32"));
    f.finish();
  }
  ipu.sram_bytes_per_tile = r.required_int("sramBytesPerTile");
  require_positive(r, "sramBytesPerTile", static_cast<double>(ipu.sram_bytes_per_tile));
  ipu.exchange_bytes_per_cycle_per_tile =
      require_positive(r, "exchangeBytesPerCyclePerTile", r.required_number("exchangeBytesPerCyclePerTile"));
  ipu.sync_cycles = require_non_negative(r, "syncCycles", r.required_number("syncCycles"));
  ipu.min_elements_per_tile = r.optional_int("minElementsPerTile", 1);
  require_positive(r, "minElementsPerTile", static_cast<double>(ipu.min_elements_per_tile));
  ipu.code_bytes_per_op = require_non_negative(r, "codeBytesPerOp", r.required_number("codeBytesPerOp"));
  ObjectReader eff = r.object("efficiency");
  const Json& eff_json = r.required_value("efficiency");
  for (auto it = eff_json.begin(); it != eff_json.end(); ++it) {
    const double e = eff.required_number(it.key());
    if (!(e > 0 && e <= 1))
      throw eff.error(it.key(), "value.bad-efficiency", "an efficiency must lie in (0, 1], got " + Json(e).dump());
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
                  "a link joins two different IPUs: give [a, b], got " + r.required_value("ipus").dump());
  for (auto e : ends)
    if (e < 0 || e >= ipu_count)
      throw r.error("ipus", "link.bad-ends",
                    "IPU " + std::to_string(e) + " does not exist (ipuCount is " + std::to_string(ipu_count) + ")");
  link.a = static_cast<int>(ends[0]);
  link.b = static_cast<int>(ends[1]);
  link.name = r.optional_string("name", "");
  link.bandwidth_bytes_per_s =
      require_positive(r, "bandwidthBytesPerSecond", r.required_number("bandwidthBytesPerSecond"));
  link.latency_s = require_non_negative(r, "latencySeconds", r.required_number("latencySeconds"));
  r.finish();
  return link;
}

// "sharedBy": how many consecutive IPUs one resource (a host link, a Streaming Memory) serves.
int shared_by(ObjectReader& r, int ipu_count) {
  const auto n = r.optional_int("sharedBy", 1);
  if (n < 1 || ipu_count % n != 0)
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
    if (!document.contains(pointer))
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

// "extends": "other.json" (relative to this file) makes a config a set of overrides on another.
Json resolve_extends(const Json& document, const std::string& origin, std::vector<std::string>& chain) {
  if (!document.is_object() || !document.contains("extends")) return document;
  const Json& target = document["extends"];
  if (!target.is_string())
    throw InputError(origin, "/extends", "json.type", "\"extends\" names the config file this one derives from");
  const std::string file_part = origin.substr(0, origin.find('#'));
  std::filesystem::path base_path(target.get<std::string>());
  if (base_path.is_relative()) base_path = std::filesystem::path(file_part).parent_path() / base_path;
  const std::string base_file = base_path.lexically_normal().string();
  if (std::find(chain.begin(), chain.end(), base_file) != chain.end())
    throw InputError(origin, "/extends", "config.extends-cycle", "\"" + base_file + "\" extends itself through " +
                                                                     std::to_string(chain.size()) + " file(s)");
  if (!std::filesystem::exists(base_file))
    throw InputError(origin, "/extends", "file.missing", "the base config \"" + base_file + "\" does not exist");
  chain.push_back(base_file);
  Json merged = resolve_extends(read_json_file(base_file), base_file, chain);
  Json own = document;
  own.erase("extends");
  merge_into(merged, own);
  return merged;
}

} // namespace

Json resolve_config_extends(const Json& document, const std::string& origin) {
  std::vector<std::string> chain{origin.substr(0, origin.find('#'))};
  return resolve_extends(document, origin, chain);
}

HardwareConfig hardware_from_json(const Json& raw_document, const std::string& origin) {
  const Json document = resolve_config_extends(raw_document, origin);
  ObjectReader root(document, origin, "");
  HardwareConfig hw;
  hw.file = origin;
  hw.name = root.required_string("name");
  root.optional_string("description", "");
  hw.ipu = read_ipu(root.object("ipu"));
  const std::int64_t ipu_count = root.required_int("ipuCount");
  if (ipu_count < 1) throw root.error("ipuCount", "value.not-positive", "ipuCount must be at least 1");
  // Every IPU needs IPU-Links to the others, so a count beyond the links given is caught as
  // link.disconnected; this only keeps the number an int.
  if (ipu_count > 1'000'000)
    throw root.error("ipuCount", "value.too-large", "ipuCount " + std::to_string(ipu_count) + " is beyond any IPU system");
  hw.ipu_count = static_cast<int>(ipu_count);
  const auto rack_ipus = root.optional_int("rackIpus", ipu_count);
  if (rack_ipus < 1 || ipu_count % rack_ipus != 0)
    throw root.error("rackIpus", "link.bad-sharing",
                     "rackIpus (the IPUs of one IPU-Link domain, a POD64 rack) must divide ipuCount (" +
                         std::to_string(ipu_count) + "), got " + std::to_string(rack_ipus));
  hw.rack_ipus = static_cast<int>(rack_ipus);
  hw.sync_latency_per_hop_s =
      require_non_negative(root, "syncLatencyPerHopSeconds", root.required_number("syncLatencyPerHopSeconds"));
  if (root.has("syncSeconds"))
    hw.fixed_sync_s = require_non_negative(root, "syncSeconds", root.required_number("syncSeconds"));
  const Json& links = root.required_value("links");
  if (!links.is_array()) throw root.error("links", "json.type", "expected an array of links");
  std::set<std::pair<int, int>> seen;
  for (std::size_t i = 0; i < links.size(); ++i) {
    LinkSpec link = read_link(ObjectReader(links[i], origin, pointer_child("/links", i)), hw.ipu_count);
    if (!seen.insert({std::min(link.a, link.b), std::max(link.a, link.b)}).second)
      throw InputError(origin, pointer_child("/links", i), "link.duplicate",
                       "IPUs " + std::to_string(link.a) + " and " + std::to_string(link.b) +
                           " are already joined; give one link with the combined bandwidth");
    hw.links.push_back(link);
  }
  {
    ObjectReader host = root.object("hostLink");
    hw.host_link.bandwidth_bytes_per_s =
        require_positive(host, "bandwidthBytesPerSecond", host.required_number("bandwidthBytesPerSecond"));
    hw.host_link.latency_s = require_non_negative(host, "latencySeconds", host.required_number("latencySeconds"));
    hw.host_link.shared_by = shared_by(host, hw.ipu_count);
    host.finish();
  }
  if (root.has("streamingMemory")) {
    ObjectReader sm = root.object("streamingMemory");
    hw.streaming_memory.present = true;
    hw.streaming_memory.bandwidth_bytes_per_s =
        require_positive(sm, "bandwidthBytesPerSecond", sm.required_number("bandwidthBytesPerSecond"));
    hw.streaming_memory.latency_s = require_non_negative(sm, "latencySeconds", sm.required_number("latencySeconds"));
    hw.streaming_memory.shared_by = shared_by(sm, hw.ipu_count);
    sm.finish();
  }
  check_sources(document, root, origin, hw.sources);
  root.finish();
  return hw;
}

HardwareConfig load_hardware(const std::string& path) { return hardware_from_json(read_json_file(path), path); }

} // namespace ipusim
