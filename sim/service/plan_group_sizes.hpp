#pragma once
// The tensor-parallel group sizes a plan searches: the scenario resharded for each, searched one
// after another, each seeded with the answer of the ones before (docs/tensor-parallel.md).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sim/search/planner.hpp"

namespace ipusim::service {

// One group size the search takes: the scenario resharded for it, its space (pipelines of
// groups) and the units it splits.
struct GroupSize {
  std::int64_t t = 1;
  Scenario scenario;
  PlanSpace space;
  LayerStructure units;
};

// `asked` (the tensor_parallel option); else the scenario's when --set fixes it; else 1, 2, 4, ... up
// to 16 (Graphcore's largest groups) and half the system (a pipeline takes two groups), each that
// the model can be split by (the others are left out, as Megatron's rules refuse them). The
// scenario's own size is always among them, to compare with.
std::vector<GroupSize> group_sizes(const std::vector<int>& asked, const Scenario& scenario, const PlanRequest& request,
                                   int layers);

// Each group size searched in turn, each seeded with the answer so far so that it prunes against
// it (the answer is the best over all of them); `what_if`: the what-if schedules, searched apart
// from the frameworks' so that they never displace them (docs/planner.md): top 1, no front.
PlanSearch search_group_sizes(const std::vector<GroupSize>& sizes, PlanSearchOptions options, bool what_if);

// Where the tensor_parallel option (or a --set of it) narrowed the group sizes and nothing fits:
// the first other default size whose search finds a fitting configuration, as no_fit_message
// words it ("" when none does).
std::string other_group_sizes_fit(const Scenario& scenario, PlanRequest request, const std::vector<GroupSize>& searched,
                                  const LayerStructure& layers);

// "tensor parallel: groups of 1 2 4 IPUs searched ...", unless only groups of 1 were.
void print_group_sizes(std::ostream& out, const std::vector<GroupSize>& sizes);

// The units candidate `c`'s split counts in `model`: layers, or half layers.
LayerStructure units_of(const Model& model, const Candidate& c);

} // namespace ipusim::service
