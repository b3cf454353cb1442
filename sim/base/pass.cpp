#include "sim/base/pass.hpp"

namespace ipusim {

std::string pass_name(Pass pass) {
  switch (pass) {
  case Pass::None: return "none";
  case Pass::Forward: return "forward";
  case Pass::Backward:
  case Pass::InputGradient:
  case Pass::WeightGradient: return "backward";
  case Pass::Update: return "update";
  case Pass::AllReduce: return "all-reduce";
  }
  return "?";
}

std::string pass_letter(Pass pass) {
  switch (pass) {
  case Pass::Forward: return "F";
  case Pass::Backward: return "BW";
  case Pass::InputGradient: return "B";
  case Pass::WeightGradient: return "W";
  case Pass::None:
  case Pass::Update:
  case Pass::AllReduce: return "";
  }
  return "";
}

} // namespace ipusim
