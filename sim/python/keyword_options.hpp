#pragma once
// ipusim.plan's and ipusim.validate's keywords as the options of the calls they make
// (sim/service). Each keyword is read as the CLI reads its flag (sim/cli/plan_command.cpp,
// validate_command.cpp), so that a keyword takes the values its flag takes and refuses the others
// with the same message.
#include <pybind11/pybind11.h>

#include <string>

#include "sim/service/plan_options.hpp"
#include "sim/service/validate.hpp"

namespace ipusim::python {

// `keywords` as ipusim/__init__.py checked them: a flag's True, `set`'s list of str, any other
// keyword a str, int or float, or a list of them. A value its flag would refuse raises
// InputError(command, "/KEYWORD", "cli.bad-value", the CLI's message).
service::PlanOptions plan_options(const std::string& scenario, const pybind11::dict& keywords, bool json);
service::ValidateOptions validate_options(const std::string& path, const pybind11::dict& keywords);

} // namespace ipusim::python
