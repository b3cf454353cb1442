#include "sim/io/input_error.hpp"

namespace ipusim {

namespace {
std::string describe(const std::string& file, const std::string& pointer, const std::string& rule,
                     const std::string& message) {
  std::string text = file.empty() ? std::string("<input>") : file;
  if (!pointer.empty()) text += ": at " + pointer;
  text += ": " + message;
  if (!rule.empty()) text += " [" + rule + "]";
  return text;
}
} // namespace

InputError::InputError(std::string file, std::string pointer, std::string rule, std::string message)
    : std::runtime_error(describe(file, pointer, rule, message)), file_(std::move(file)),
      pointer_(std::move(pointer)), rule_(std::move(rule)), message_(std::move(message)) {}

} // namespace ipusim
