#pragma once
// Every problem with user input is reported as an InputError: which file, where in
// it (a JSON pointer such as /ops/3/virtualGraph), which rule, and what is wrong.
// The CLI turns it into exit code 2.
#include <stdexcept>
#include <string>

namespace ipusim {

class InputError : public std::runtime_error {
public:
  InputError(std::string file, std::string pointer, std::string rule, std::string message);

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  // A stable identifier such as "annotation.mixed-virtual-graph"; tests and scripts match on it.
  const std::string& rule() const { return rule_; }
  const std::string& message() const { return message_; }

private:
  std::string file_, pointer_, rule_, message_;
};

} // namespace ipusim
