#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/io/hardware.hpp"

namespace ipusim {

HardwareConfig load_hardware(const std::string& path);
// The config with its "extends" chain merged in (objects key by key, anything else replaces).
nlohmann::json resolve_config_extends(const nlohmann::json& document, const std::string& origin);
HardwareConfig hardware_from_json(const nlohmann::json& document, const std::string& origin);

} // namespace ipusim
