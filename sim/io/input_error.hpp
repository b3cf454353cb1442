#pragma once
// Every problem with user input is reported as an InputError: which file, where in
// it (a JSON pointer such as /ops/3/virtualGraph; "/" for the file as a whole), which
// rule, and what is wrong. The CLI turns it into exit code 2. what() is one line of at
// most about 2 KB: the file and pointer are cut after 300 bytes, the message after 1,000.
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

// `text` made safe to print on one line: control characters (NUL included, which would
// cut a C string) become \u00XX and bytes that are not UTF-8 become \xXX.
std::string printable(const std::string& text);
// True when `text` is well-formed UTF-8 (JSON strings must be).
bool is_valid_utf8(const std::string& text);

} // namespace ipusim
