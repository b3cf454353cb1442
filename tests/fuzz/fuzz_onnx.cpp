// Structure-aware libFuzzer target for the ONNX importer: a byte-level mutation of a
// protobuf rarely stays a valid protobuf, so this target's custom mutator parses the input
// as a ModelProto and mutates the message through protobuf reflection (fields of any
// message in the tree added, removed, duplicated, swapped, copied from another message of
// the same type, set to edge values; op types and attribute names drawn from ONNX's
// schemas; tensor names from the model's own, so edges survive; raw data truncated or
// grown), then serialises it. Each mutant goes through what `validate` and `run` do before
// simulating: import (with libonnx's shape inference), the graph, every op's FLOPs, the JSON
// conversion, the plan on an M2000 and the run estimate. Anything but an InputError with a
// file, a place and a rule is a finding. Run by scripts/sanitize.sh (docs/reliability.md).
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim/cost/op_work.hpp"
#include "sim/graph/model_graph.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_loader.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/io/onnx_model_loader.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simulate/run_estimate.hpp"

namespace {

using namespace ipusim;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Rng = std::minstd_rand;

const std::string kSource = IPUSIM_SOURCE_DIR;

std::size_t pick(Rng& rng, std::size_t n) { return n ? std::uniform_int_distribution<std::size_t>(0, n - 1)(rng) : 0; }

template <typename T> const T& pick_of(Rng& rng, const std::vector<T>& v) { return v[pick(rng, v.size())]; }

// Op types and attribute names ONNX defines: a mutated node reaches schemas' inference code.
const std::vector<std::string>& schema_op_types() {
  static const std::vector<std::string> types = [] {
    std::set<std::string> s;
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas())
      if (schema.domain().empty()) s.insert(schema.Name());
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return types;
}

const std::vector<std::string>& schema_attribute_names() {
  static const std::vector<std::string> names = [] {
    std::set<std::string> s{"__ipu_number", "__pipeline_stage", "__recompute_output_in_backward_pass"};
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas())
      for (const auto& [name, attribute] : schema.attributes()) s.insert(name);
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return names;
}

struct Site {
  Message* message;
};

// Every message of the tree, and the strings that name things (tensor, node, attribute names).
void collect(Message* m, std::vector<Site>& sites, std::vector<std::string>& names) {
  sites.push_back({m});
  const Reflection* r = m->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(*m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated())
        for (int i = 0; i < r->FieldSize(*m, f); ++i) collect(r->MutableRepeatedMessage(m, f, i), sites, names);
      else
        collect(r->MutableMessage(m, f), sites, names);
    } else if (f->type() == FieldDescriptor::TYPE_STRING &&
               (f->name() == "name" || f->name() == "input" || f->name() == "output" || f->name() == "dim_param")) {
      if (f->is_repeated())
        for (int i = 0; i < r->FieldSize(*m, f); ++i) names.push_back(r->GetRepeatedString(*m, f, i));
      else
        names.push_back(r->GetString(*m, f));
    }
  }
}

std::int64_t edge_int(Rng& rng, std::int64_t current) {
  static const std::int64_t edges[] = {0,  1,  -1, 2,  3, 4, 7, 8, 16, 64, 255, 256, 1000, 999983,
                                       INT32_MAX, INT32_MIN, std::int64_t{1} << 31, std::int64_t{1} << 32,
                                       std::int64_t{1} << 40, std::int64_t{1} << 62, INT64_MAX, INT64_MIN};
  switch (pick(rng, 4)) {
  // Wrapping on purpose (in unsigned arithmetic: the mutator must not overflow itself).
  case 0: return static_cast<std::int64_t>(static_cast<std::uint64_t>(current) + (pick(rng, 2) ? 1u : ~std::uint64_t{0}));
  case 1: return static_cast<std::int64_t>(static_cast<std::uint64_t>(current) * 2u);
  case 2: return static_cast<std::int64_t>(pick(rng, 17));
  default: return edges[pick(rng, sizeof edges / sizeof edges[0])];
  }
}

double edge_double(Rng& rng, double current) {
  static const double edges[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e38, 3.4e38, 1e308, 5e-324,
                                 std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity()};
  return pick(rng, 3) ? edges[pick(rng, sizeof edges / sizeof edges[0])] : current * 2;
}

class Mutator {
public:
  Mutator(onnx::ModelProto& model, unsigned seed) : model_(model), rng_(seed) {
    collect(&model_, sites_, names_);
    if (names_.empty()) names_.push_back("x");
  }

  void mutate() {
    // Taken anew each time: a removed element takes its messages with it.
    sites_.clear();
    std::vector<std::string> ignored;
    collect(&model_, sites_, ignored);
    Message* m = sites_[pick(rng_, sites_.size())].message;
    const auto* d = m->GetDescriptor();
    if (d->field_count() == 0) return;
    const FieldDescriptor* f = d->field(static_cast<int>(pick(rng_, static_cast<std::size_t>(d->field_count()))));
    if (f->is_repeated()) repeated(m, f);
    else singular(m, f);
  }

private:
  // Another message of the same type in the tree, to copy from (never `m` itself or one inside it).
  const Message* same_type(const Message* m, const google::protobuf::Descriptor* d) {
    std::vector<const Message*> candidates;
    for (const Site& s : sites_)
      if (s.message != m && s.message->GetDescriptor() == d) candidates.push_back(s.message);
    return candidates.empty() ? nullptr : candidates[pick(rng_, candidates.size())];
  }

  std::string string_value(const FieldDescriptor* f, const std::string& current) {
    const std::string& field = f->name();
    if (field == "op_type" && pick(rng_, 4)) return pick_of(rng_, schema_op_types());
    if (field == "name" && f->containing_type()->name() == "AttributeProto" && pick(rng_, 4))
      return pick_of(rng_, schema_attribute_names());
    if (field == "raw_data" || f->type() == FieldDescriptor::TYPE_BYTES) {
      std::string s = current;
      switch (pick(rng_, 4)) {
      case 0: s.resize(pick(rng_, s.size() + 1)); break;                   // truncated
      case 1: s.append(pick(rng_, 16) + 1, static_cast<char>(pick(rng_, 256))); break;
      case 2: s += s; break;
      default:
        for (int i = 0; i < 4 && !s.empty(); ++i) s[pick(rng_, s.size())] = static_cast<char>(pick(rng_, 256));
      }
      return s;
    }
    switch (pick(rng_, 6)) {
    case 0: return "";
    case 1: return current + current;
    case 2: return current.substr(0, pick(rng_, current.size() + 1));
    case 3: return std::string(1, static_cast<char>(pick(rng_, 256))) + current;
    default: return pick_of(rng_, names_);  // an existing name: rewires an edge
    }
  }

  int enum_value(const FieldDescriptor* f) {
    const auto* e = f->enum_type();
    return e->value(static_cast<int>(pick(rng_, static_cast<std::size_t>(e->value_count()))))->number();
  }

  void singular(Message* m, const FieldDescriptor* f) {
    const Reflection* r = m->GetReflection();
    if (r->HasField(*m, f) && pick(rng_, 5) == 0) {
      r->ClearField(m, f);
      return;
    }
    switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      r->SetInt32(m, f, static_cast<std::int32_t>(edge_int(rng_, r->GetInt32(*m, f))));
      break;
    case FieldDescriptor::CPPTYPE_INT64: r->SetInt64(m, f, edge_int(rng_, r->GetInt64(*m, f))); break;
    case FieldDescriptor::CPPTYPE_UINT32:
      r->SetUInt32(m, f, static_cast<std::uint32_t>(edge_int(rng_, r->GetUInt32(*m, f))));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      r->SetUInt64(m, f, static_cast<std::uint64_t>(edge_int(rng_, static_cast<std::int64_t>(r->GetUInt64(*m, f)))));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      r->SetFloat(m, f, static_cast<float>(edge_double(rng_, r->GetFloat(*m, f))));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE: r->SetDouble(m, f, edge_double(rng_, r->GetDouble(*m, f))); break;
    case FieldDescriptor::CPPTYPE_BOOL: r->SetBool(m, f, !r->GetBool(*m, f)); break;
    case FieldDescriptor::CPPTYPE_ENUM: r->SetEnumValue(m, f, enum_value(f)); break;
    case FieldDescriptor::CPPTYPE_STRING: r->SetString(m, f, string_value(f, r->GetString(*m, f))); break;
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Message* source = same_type(m, f->message_type());
      std::unique_ptr<Message> copy(source ? source->New() : nullptr);
      if (copy) copy->CopyFrom(*source);  // copied first: the source may be inside the field replaced
      Message* target = r->MutableMessage(m, f);
      if (copy && pick(rng_, 2)) target->CopyFrom(*copy);
      else if (pick(rng_, 2)) target->Clear();
      break;
    }
    }
  }

  void add_scalar(Message* m, const FieldDescriptor* f) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: r->AddInt32(m, f, static_cast<std::int32_t>(edge_int(rng_, 1))); break;
    case FieldDescriptor::CPPTYPE_INT64: r->AddInt64(m, f, edge_int(rng_, 1)); break;
    case FieldDescriptor::CPPTYPE_UINT32: r->AddUInt32(m, f, static_cast<std::uint32_t>(edge_int(rng_, 1))); break;
    case FieldDescriptor::CPPTYPE_UINT64: r->AddUInt64(m, f, static_cast<std::uint64_t>(edge_int(rng_, 1))); break;
    case FieldDescriptor::CPPTYPE_FLOAT: r->AddFloat(m, f, static_cast<float>(edge_double(rng_, 1))); break;
    case FieldDescriptor::CPPTYPE_DOUBLE: r->AddDouble(m, f, edge_double(rng_, 1)); break;
    case FieldDescriptor::CPPTYPE_BOOL: r->AddBool(m, f, pick(rng_, 2)); break;
    case FieldDescriptor::CPPTYPE_ENUM: r->AddEnumValue(m, f, enum_value(f)); break;
    case FieldDescriptor::CPPTYPE_STRING: r->AddString(m, f, string_value(f, pick_of(rng_, names_))); break;
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Message* source = same_type(m, f->message_type());
      std::unique_ptr<Message> copy(source ? source->New() : nullptr);
      if (copy) copy->CopyFrom(*source);
      Message* added = r->AddMessage(m, f);
      if (copy && pick(rng_, 4)) added->CopyFrom(*copy);
      break;
    }
    }
  }

  void repeated(Message* m, const FieldDescriptor* f) {
    const Reflection* r = m->GetReflection();
    const int size = r->FieldSize(*m, f);
    const std::size_t action = size == 0 ? 0 : pick(rng_, 5);
    if (action == 0) {  // add
      add_scalar(m, f);
      const int last = r->FieldSize(*m, f) - 1;
      if (last > 0 && pick(rng_, 2)) r->SwapElements(m, f, last, static_cast<int>(pick(rng_, static_cast<std::size_t>(last))));
    } else if (action == 1) {  // remove one
      r->SwapElements(m, f, static_cast<int>(pick(rng_, static_cast<std::size_t>(size))), size - 1);
      r->RemoveLast(m, f);
    } else if (action == 2) {  // swap two
      r->SwapElements(m, f, static_cast<int>(pick(rng_, static_cast<std::size_t>(size))),
                      static_cast<int>(pick(rng_, static_cast<std::size_t>(size))));
    } else if (action == 3 && f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {  // duplicate one
      const int i = static_cast<int>(pick(rng_, static_cast<std::size_t>(size)));
      std::unique_ptr<Message> copy(r->GetRepeatedMessage(*m, f, i).New());
      copy->CopyFrom(r->GetRepeatedMessage(*m, f, i));
      r->AddMessage(m, f)->CopyFrom(*copy);
    } else {  // change one in place
      const int i = static_cast<int>(pick(rng_, static_cast<std::size_t>(size)));
      switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT64: r->SetRepeatedInt64(m, f, i, edge_int(rng_, r->GetRepeatedInt64(*m, f, i))); break;
      case FieldDescriptor::CPPTYPE_INT32:
        r->SetRepeatedInt32(m, f, i, static_cast<std::int32_t>(edge_int(rng_, r->GetRepeatedInt32(*m, f, i))));
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        r->SetRepeatedFloat(m, f, i, static_cast<float>(edge_double(rng_, r->GetRepeatedFloat(*m, f, i))));
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        r->SetRepeatedString(m, f, i, string_value(f, r->GetRepeatedString(*m, f, i)));
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        Message* element = r->MutableRepeatedMessage(m, f, i);
        const auto* d = element->GetDescriptor();
        if (d->field_count() > 0) {
          const FieldDescriptor* g = d->field(static_cast<int>(pick(rng_, static_cast<std::size_t>(d->field_count()))));
          if (g->is_repeated()) repeated(element, g);
          else singular(element, g);
        }
        break;
      }
      default: r->SwapElements(m, f, 0, size - 1);
      }
    }
  }

  onnx::ModelProto& model_;
  Rng rng_;
  std::vector<Site> sites_;
  std::vector<std::string> names_;
};

// What validate and run do before simulating; a scenario on an M2000 gives the plan a config.
void check_model(const std::string& path) {
  const Model m = load_onnx_model(path);
  build_graph(m);
  for (const Op& op : m.ops)
    if (!op.flops) derived_flops_per_sample(m, op);
  const std::string json = model_to_json_text(m, "fuzz");
  const Model back = model_from_json(parse_json_text(json, path + ".json"), path + ".json");
  const Json scenario{{"name", "fuzz"},
                      {"model", path},
                      {"config", kSource + "/configs/ipu-m2000.json"},
                      {"execution", {{"microBatchSize", 2}, {"batchesPerStep", 8}}}};
  const Scenario sc = scenario_from_json(scenario, kSource + "/scenarios/fuzz.json");
  const ModelGraph g = build_graph(sc.model);
  const Plan plan = make_plan(sc, g);
  estimate_run(sc, plan, sc.execution.modes, false);
  (void)back;
}

} // namespace

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return LLVMFuzzerMutate(data, size, max_size);
  Mutator mutator(model, seed);
  Rng rng(seed);
  const std::size_t count = 1 + pick(rng, 3);
  for (std::size_t i = 0; i < count; ++i) mutator.mutate();
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

// libonnx's inference in this process, not a child: libFuzzer sees its coverage and its
// crashes (each one a check to add before inference, sim/io/onnx_structure_check.cpp).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ipusim::infer_onnx_shapes_in_process(true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/ipusim-fuzz-onnx-" + std::to_string(::getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    check_model(path);
  } catch (const InputError& e) {
    if (e.file().empty() || e.pointer().empty() || e.rule().empty()) std::abort();  // an unlocated error
  }
  return 0;
}
