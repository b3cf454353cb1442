// ipusim._ipusim: the C++ half of the Python module (python/ipusim/__init__.py is the rest).
// A loaded scenario is kept across runs: each run reads only its execution settings and
// simulates in forked children (sim/simulate), so SimGrid never starts in the interpreter
// and any number of runs fit in one Python process. Documents cross as JSON text. plan and
// validate are the library's calls that the CLI's commands make too (sim/service).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/generation/generation_output.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/overrides.hpp"
#include "sim/io/scenario_loader.hpp"
#include "sim/output/json_report.hpp"
#include "sim/plan/plan.hpp"
#include "sim/python/keyword_options.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/search/memory_advice.hpp"
#include "sim/service/plan_scenario.hpp"
#include "sim/service/validate.hpp"
#include "sim/simulate/simulation.hpp"

namespace py = pybind11;

namespace ipusim::python {

namespace {

// One execution field as Python gave it: a dotted path under "execution" and its value.
using Setting = std::pair<std::string, std::string>;

std::vector<Mode> modes_of(const std::string& mode, const Execution& execution) {
  if (mode.empty()) return execution.modes;
  if (auto modes = modes_named(mode)) return *modes;
  throw InputError("mode", "", "cli.bad-value",
                   "mode is \"sharded\", \"pipelined\", \"both\" or \"phased\", got \"" + mode + "\"");
}

// "a.b" -> "/execution/a/b"
std::string execution_pointer(const std::string& path) {
  std::string pointer = "/execution/" + path;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  return pointer;
}

class LoadedScenario {
public:
  explicit LoadedScenario(Scenario scenario) : scenario_(std::move(scenario)) {}

  // The run document `ipusim run --json` writes for this scenario with `settings` applied
  // as `--set execution.PATH=VALUE` would (and recorded as such under "overrides"). Called
  // without the GIL (it touches no Python object): other threads go on, and one waiting for
  // this scenario's lock does not hold the GIL that this run needs back to return.
  std::string run(const std::vector<Setting>& settings, const std::string& mode) {
    std::lock_guard<std::mutex> lock(mutex_);
    nlohmann::json execution = scenario_.scenario_document.value("execution", nlohmann::json::object());
    std::vector<std::string> overrides;
    for (const auto& [path, text] : settings) {
      const nlohmann::json value = parse_json_text(text, "execution." + path);
      apply_override(execution, path, value, "execution." + path);
      overrides.push_back("execution." + path + "=" + value.dump());
    }
    try {
      return run_with(execution_from_json(execution, scenario_.file), mode, overrides, execution.dump() + "\n" + mode);
    } catch (const InputError& e) {
      // A value the call gave is the call's to fix, not the scenario file's.
      for (const auto& [path, text] : settings) {
        const std::string at = execution_pointer(path);
        if (e.file() == scenario_.file && (e.pointer() == at || e.pointer().rfind(at + "/", 0) == 0))
          throw InputError("execution", e.pointer().substr(std::string("/execution").size()), e.rule(),
                           e.message() + " (the value execution[\"" + path + "\"] gave; " + scenario_.file + " as changed)");
      }
      throw;
    }
  }

  const Scenario& scenario() const { return scenario_; }

private:
  // `plan_key`: what the plan depends on beyond the loaded model and system (the execution
  // as the call changed it, and the modes).
  std::string run_with(Execution run_execution, const std::string& mode, const std::vector<std::string>& overrides,
                       const std::string& plan_key) {
    const std::vector<Mode> modes = modes_of(mode, run_execution);
    // Another tensor-parallel group size (or training, which adds the shard's gradient
    // collectives) makes another model: the scenario is resharded for this run.
    if (run_execution.tensor_parallel != scenario_.execution.tensor_parallel ||
        (scenario_.unsharded && run_execution.training != scenario_.execution.training)) {
      Scenario resharded = scenario_;
      resharded.execution = std::move(run_execution);
      apply_tensor_parallel(resharded);
      const ModelGraph graph = build_graph(resharded.model);
      return report(resharded, graph, modes, overrides, nullptr);
    }
    // The scenario is the loaded one with this execution: swapped in for the run, not copied
    // (a BERT-Large model is megabytes), and put back however the run ends.
    struct Restore {
      Execution& slot;
      Execution saved;
      ~Restore() { slot = std::move(saved); }
    } restore{scenario_.execution, std::exchange(scenario_.execution, std::move(run_execution))};
    if (!graph_) graph_ = build_graph(scenario_.model);  // the model's: the same for every execution
    return report(scenario_, *graph_, modes, overrides, &plan_key);
  }

  // What the last kKept executions run made before simulating, by plan_key: a run again with
  // the same execution (a loop over seeds in a notebook, a benchmark) neither costs its ops
  // nor estimates its memory again.
  struct Kept {
    Plan plan;
    std::vector<MemoryReport> memory;  // per mode, once a run has estimated it
    nlohmann::json plan_document;      // the run document's "plan", once written
  };
  static constexpr std::size_t kKept = 8;
  Kept& kept(const std::string& key, const Scenario& scenario, const ModelGraph& graph, const std::vector<Mode>& modes) {
    for (auto& [k, entry] : kept_)
      if (k == key) return entry;
    if (kept_.size() == kKept) kept_.pop_front();
    kept_.emplace_back(key, Kept{make_plan(scenario, graph, modes), {}, {}});
    return kept_.back().second;
  }

  std::string report(const Scenario& scenario, const ModelGraph& graph, const std::vector<Mode>& modes,
                     const std::vector<std::string>& overrides, const std::string* plan_key) {
    if (scenario.generation) {  // as `ipusim run --json` writes a generation
      nlohmann::json document{{"generation", generation_json(scenario, simulate_generation(scenario, modes, &std::cerr))}};
      add_provenance(document, {overrides});
      return document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    SimulateOptions options;
    options.keep_log = false;
    options.notes = &std::cerr;
    options.graph = &graph;
    Kept* entry = plan_key != nullptr ? &kept(*plan_key, scenario, graph, modes) : nullptr;
    if (entry == nullptr) return run_text(scenario, modes, overrides, options, nullptr);
    // The kept plan and plan document are lent to the run and taken back after it; a run that
    // throws loses them, so its entry is forgotten.
    try {
      return run_text(scenario, modes, overrides, options, entry);
    } catch (...) {
      std::erase_if(kept_, [&](const auto& k) { return &k.second == entry; });
      throw;
    }
  }

  std::string run_text(const Scenario& scenario, const std::vector<Mode>& modes, const std::vector<std::string>& overrides,
                       SimulateOptions options, Kept* entry) {
    if (entry != nullptr) {
      options.plan = &entry->plan;
      if (!entry->memory.empty()) options.memory = &entry->memory;
    }
    Simulation sim = simulate(scenario, modes, options);
    if (entry != nullptr && entry->memory.empty())
      for (const ModeRun& r : sim.runs) entry->memory.push_back(r.metrics.memory);
    for (ModeRun& r : sim.runs)
      if (!r.metrics.memory.fits) r.metrics.memory.fixes = memory_fixes(scenario, r.metrics.mode);
    if (entry != nullptr && entry->plan_document.is_null()) entry->plan_document = plan_json(scenario, sim.plan);
    nlohmann::json document = run_document(scenario, sim, {overrides}, entry != nullptr ? &entry->plan_document : nullptr);
    std::string text = document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (entry != nullptr) {
      entry->plan = std::move(sim.plan);
      entry->plan_document = std::move(document["plan"]);
    }
    return text;
  }

  Scenario scenario_;
  std::optional<ModelGraph> graph_;
  std::deque<std::pair<std::string, Kept>> kept_;
  std::mutex mutex_;
};

// ipusim.plan: `ipusim plan`'s exit status and what it prints on standard output (the report,
// or with `json` the document), its line on standard error when nothing fits too.
std::pair<int, std::string> plan(const std::string& scenario, const py::dict& keywords, bool json) {
  const service::PlanOptions options = plan_options(scenario, keywords, json);
  std::ostringstream report;
  service::PlanResult result;
  {
    py::gil_scoped_release unlocked;
    result = service::plan_scenario(options, report);
  }
  if (!result.no_fit.empty()) std::cerr << "ipusim: " << result.no_fit << "\n";
  return {result.status, result.document.is_null() ? report.str() : result.document.dump(2) + "\n"};
}

// ipusim.validate: what `ipusim validate` prints.
std::string validate(const std::string& path, const py::dict& keywords) {
  const service::ValidateOptions options = validate_options(path, keywords);
  std::ostringstream report;
  py::gil_scoped_release unlocked;
  service::validate_file(options, report);
  return report.str();
}

} // namespace

} // namespace ipusim::python

PYBIND11_MODULE(_ipusim, m) {
  using namespace ipusim;
  using python::LoadedScenario;
  m.doc() = "ipusim's simulator: load a scenario once, run it many times (docs/python.md)";
  m.attr("version") = IPUSIM_VERSION;

  // InputError and EngineError are Python classes (ipusim/__init__.py) with the C++ fields.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      const py::object cls = py::module_::import("ipusim").attr("InputError");
      const py::object error = cls(e.what(), e.file(), e.pointer(), e.rule(), e.message());
      PyErr_SetObject(cls.ptr(), error.ptr());
    } catch (const EngineError& e) {
      PyErr_SetString(py::module_::import("ipusim").attr("EngineError").ptr(), e.what());
    }
  });

  py::class_<LoadedScenario>(m, "LoadedScenario")
      .def("run", &LoadedScenario::run, py::call_guard<py::gil_scoped_release>(), py::arg("settings"), py::arg("mode"))
      .def_property_readonly("file", [](const LoadedScenario& s) { return s.scenario().file; })
      .def_property_readonly("name", [](const LoadedScenario& s) { return s.scenario().name; })
      .def_property_readonly("model_file", [](const LoadedScenario& s) { return s.scenario().model.file; })
      .def_property_readonly("config_file", [](const LoadedScenario& s) { return s.scenario().hardware.file; });

  m.def("load_scenario", [](const std::string& path) { return new LoadedScenario(load_scenario(path)); },
        py::return_value_policy::take_ownership, py::arg("path"));
  m.def("scenario_from_json",
        [](const std::string& text, const std::string& origin) {
          return new LoadedScenario(scenario_from_json(parse_json_text(text, origin), origin));
        },
        py::return_value_policy::take_ownership, py::arg("text"), py::arg("origin"));
  m.def("validate", &python::validate, py::arg("path"), py::arg("keywords"));
  m.def("plan", &python::plan, py::arg("scenario"), py::arg("keywords"), py::arg("json"));
}
