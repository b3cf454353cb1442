#include "sim/io/aliases.hpp"

#include <algorithm>
#include <cctype>

#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

struct KeyAlias {
  Format format;
  const char* pointer;  // the object holding the key
  const char* alias;
  const char* key;
};

// Same meaning, checked against the sources: PopART SessionOptions (accumulationFactor,
// replicatedGraphCount) and PopTorch Options (Training.gradientAccumulation,
// replicationFactor, deviceIterations = PopART's batchesPerStep).
constexpr KeyAlias kAliases[] = {
    {Format::Scenario, "/execution", "accumulationFactor", "gradientAccumulation"},
    {Format::Scenario, "/execution", "replicatedGraphCount", "replicas"},
    {Format::Scenario, "/execution", "replicationFactor", "replicas"},
    {Format::Scenario, "/execution", "deviceIterations", "batchesPerStep"},
    {Format::Scenario, "/execution", "enablePrefetchDatastreams", "prefetchDataStreams"},
    // PopXL's examples (execution.tensor_parallel), Megatron-LM (tensor_model_parallel_size), tp.
    {Format::Scenario, "/execution", "tensor_parallel", "tensorParallel"},
    {Format::Scenario, "/execution", "tensor_model_parallel_size", "tensorParallel"},
    {Format::Scenario, "/execution", "tp", "tensorParallel"},
    // PopXL's example configs (execution.micro_batch_size, device_iterations, data_parallel,
    // available_memory_proportion, io_tiles) and PopTorch's Python names of the options above.
    {Format::Scenario, "/execution", "micro_batch_size", "microBatchSize"},
    {Format::Scenario, "/execution", "device_iterations", "batchesPerStep"},
    {Format::Scenario, "/execution", "data_parallel", "replicas"},
    {Format::Scenario, "/execution", "replication_factor", "replicas"},
    {Format::Scenario, "/execution", "gradient_accumulation", "gradientAccumulation"},
    {Format::Scenario, "/execution", "available_memory_proportion", "availableMemoryProportion"},
    {Format::Scenario, "/execution", "io_tiles", "numIOTiles"},
};

struct KeyHint {
  Format format;
  const char* pointer;
  const char* key;
  const char* hint;
};

// PopART/PopTorch options with no key of the same meaning.
constexpr KeyHint kHints[] = {
    {Format::Scenario, "/execution", "enablePipelining",
     "ipusim runs both modes by default; \"mode\": \"pipelined\" runs the pipeline only"},
    {Format::Scenario, "/execution", "virtualGraphMode",
     "ipusim always places ops by the model's virtualGraph annotations (PopART's VirtualGraphMode::Manual)"},
    {Format::Scenario, "/execution", "autoRecomputation",
     "write \"recomputation\": \"pipeline\" (PopART's RecomputationType::Pipeline) or \"none\""},
    {Format::Scenario, "/execution", "enableGradientAccumulation",
     "accumulation is on when \"gradientAccumulation\" is above 1"},
    {Format::Scenario, "/execution", "enableReplicatedGraphs", "write the number of replicas as \"replicas\""},
    {Format::Scenario, "/execution", "ipus_per_replica",
     "a replica's IPUs are the model's virtualGraph annotations (times tensorParallel); ipusim plan --ipus searches "
     "or fixes them"},
    {Format::Scenario, "/execution", "pipeline_model_parallel_size",
     "Megatron's pipeline depth: the model's pipelineStage annotations give it (ipusim annotate --layers-per-ipu, "
     "or ipusim plan)"},
    {Format::Scenario, "/execution", "global_batch_size",
     "the global batch is microBatchSize x gradientAccumulation x replicas; ipusim plan --global-batch fixes it"},
    {Format::Scenario, "/execution", "sequence_parallel",
     "known but not modelled: Megatron's sequence parallelism (docs/tensor-parallel.md, \"Not modelled yet\")"},
    {Format::Scenario, "/execution", "attention_serialisation",
     "known but not modelled: PopXL's attention serialisation (docs/tensor-parallel.md, \"Not modelled yet\")"},
    {Format::Scenario, "/execution", "code_load",
     "known but not modelled: PopXL's code loading from Streaming Memory"},
};

} // namespace

std::optional<std::string> closest_word(const std::string& word, const std::vector<std::string>& known) {
  const std::string w = lower(word);
  const std::size_t allowed = std::max<std::size_t>(2, w.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& k : known) {
    const std::size_t d = edit_distance(w, lower(k));
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  const auto best = closest_word(word, known);
  return best ? " (did you mean \"" + *best + "\"?)" : "";
}

std::string popart_key_hint(Format format, const std::string& pointer, const std::string& key) {
  for (const KeyHint& h : kHints)
    if (h.format == format && pointer == h.pointer && key == h.key) return h.hint;
  return "";
}

nlohmann::json resolve_key_aliases(nlohmann::json object, Format format, const std::string& file,
                                   const std::string& pointer, std::map<std::string, std::string>& renamed) {
  if (!object.is_object()) return object;
  for (const KeyAlias& a : kAliases) {
    if (a.format != format || pointer != a.pointer || !object.contains(a.alias)) continue;
    if (object.contains(a.key) || renamed.count(a.key))
      throw InputError(file, pointer + "/" + a.alias, "json.alias-twice",
                       std::string("\"") + a.alias + "\" is PopART's or PopTorch's name for \"" + a.key +
                           "\", which is also given; keep one");
    object[a.key] = object[a.alias];
    object.erase(a.alias);
    renamed[a.key] = a.alias;
  }
  return object;
}

} // namespace ipusim
