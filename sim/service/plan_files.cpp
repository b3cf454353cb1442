#include "sim/service/plan_files.hpp"

#include <filesystem>

#include "sim/io/input_error.hpp"
#include "sim/io/model_writer.hpp"
#include "sim/output/output_file.hpp"
#include "sim/service/plan_document.hpp"
#include "sim/service/plan_group_sizes.hpp"

namespace ipusim::service {

namespace {

namespace fs = std::filesystem;

// The written scenario names its model and config relative to itself.
std::string relative_to(const fs::path& file, const fs::path& folder) {
  return fs::absolute(file).lexically_normal().lexically_relative(fs::absolute(folder).lexically_normal()).string();
}

// The prefix names a file in a folder that may hold it.
void check_write_prefix(const std::string& prefix) {
  std::error_code ec;
  const fs::path p(prefix);
  const auto status = fs::status(p, ec);
  std::string why;
  if (prefix == "-")
    why = "would be standard output (as for run), which cannot hold two files";
  else if (prefix.empty() || p.filename().empty() || p.filename() == "." || p.filename() == "..")
    why = "names a folder";
  else if (fs::is_directory(status))
    why = "is a folder";
  else if (fs::exists(status) && !fs::is_regular_file(status))
    why = "is a device, FIFO or socket";
  else if (const fs::path parent = p.parent_path(); !parent.empty() && fs::is_directory(parent, ec) &&
                                                       parent.lexically_normal() == fs::path("/dev"))
    why = "is in /dev";
  if (!why.empty())
    throw InputError("command line", "--write", "cli.bad-value",
                     "--write " + prefix + " " + why + "; it is the prefix of the two files written (PREFIX.model.json, "
                     "PREFIX.scenario.json): name one, e.g. --write out/bert-plan");
}

} // namespace

void check_plan_files(const std::string& prefix, bool force) {
  check_write_prefix(prefix);
  check_output(prefix + ".model.json", force);
  check_output(prefix + ".scenario.json", force);
}

void write_plan_files(const std::string& prefix, bool force, std::ostream& out, const Scenario& base,
                      const Scenario& best_sc, const Candidate& best) {
  const std::string model_path = prefix + ".model.json";
  const std::string scenario_path = prefix + ".scenario.json";
  check_output(model_path, force);
  check_output(scenario_path, force);
  const fs::path folder = fs::path(scenario_path).parent_path().empty() ? fs::path(".") : fs::path(scenario_path).parent_path();
  const bool training = base.execution.training;
  const std::string description = "written by ipusim plan from " + base.file + ": " + best.describe(training) + " (" +
                                  base.model.name + " re-annotated; the layers' ops are otherwise unchanged)";
  nlohmann::json doc = base.scenario_document;
  doc["name"] = base.name + "-planned";
  doc["description"] = description;
  doc["model"] = relative_to(model_path, folder);
  if (doc.contains("config") && doc["config"].is_string())
    doc["config"] = relative_to(fs::path(base.file).parent_path() / doc["config"].get<std::string>(), folder);
  doc["execution"] = planned_execution(doc["execution"], best_sc.execution, training);
  const Model written =
      best_sc.unsharded ? place_layers(best_sc.unsharded->model, units_of(best_sc.unsharded->model, best),
                                       best.split.layers_per_ipu, best.split.heads_on_last)
                        : best_sc.model;
  write_output(model_path, model_to_json_text(written, description), force);
  write_output(scenario_path, doc.dump(2) + "\n", force);
  out << "\nwrote " << model_path << " and " << scenario_path << " (ipusim run " << scenario_path << ")\n";
}

} // namespace ipusim::service
