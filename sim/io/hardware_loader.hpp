#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/io/hardware.hpp"

namespace ipusim {

HardwareConfig load_hardware(const std::string& path);
HardwareConfig hardware_from_json(const nlohmann::json& document, const std::string& origin);

} // namespace ipusim
