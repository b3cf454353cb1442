#include <catch2/catch.hpp>

#include "sim/graph/model_graph.hpp"
#include "sim/plan/plan.hpp"
#include "support.hpp"

using namespace ipusim;
using namespace ipusim::test;

TEST_CASE("placeholder plan test", "[plan]") { CHECK(true); }
