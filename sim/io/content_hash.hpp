#pragma once
// The content hash of a model or config document as run (after "extends" and --set).
#include <nlohmann/json.hpp>
#include <string>

namespace ipusim {

// "fnv1a64:HEX" (FNV-1a, 64 bits, of the compact dump): tells two models or configs apart by
// content, whether from a file or inline (run documents' modelHash / configHash, compare,
// report, run --from).
std::string content_hash(const nlohmann::json& document);

} // namespace ipusim
