#include "sim/io/input_error.hpp"

#include <cstdio>

namespace ipusim {

namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 when it is not one (overlong
// forms, surrogates and code points past U+10FFFF included).
std::size_t utf8_length(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  unsigned min = 0, code = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) n = 2, min = 0x80, code = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, min = 0x800, code = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, min = 0x10000, code = c & 0x07;
  else return 0;
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return n;
}

// An error line echoes at most a few hundred bytes of input: a 1 MB key would otherwise
// make a 2 MB line (in the pointer and in the message). Cut at a UTF-8 boundary.
constexpr std::size_t kMaxPathBytes = 300, kMaxMessageBytes = 1000;

std::string bounded(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...(" + std::to_string(text.size() - cut) + " more bytes)";
}

std::string describe(const std::string& file, const std::string& pointer, const std::string& rule,
                     const std::string& message) {
  return bounded(printable(file), kMaxPathBytes) + ": at " + bounded(printable(pointer), kMaxPathBytes) + ": " +
         bounded(printable(message), kMaxMessageBytes) + " [" + bounded(printable(rule), kMaxPathBytes) + "]";
}

} // namespace

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  char escape[8];
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      std::snprintf(escape, sizeof escape, "\\x%02X", c);
      out += escape;
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(escape, sizeof escape, "\\u%04X", c);
      out += escape;
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

bool is_valid_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

InputError::InputError(std::string file, std::string pointer, std::string rule, std::string message)
    : std::runtime_error(describe(file.empty() ? "<input>" : file, pointer.empty() ? "/" : pointer, rule, message)),
      file_(std::move(file)), pointer_(pointer.empty() ? "/" : std::move(pointer)), rule_(std::move(rule)),
      message_(std::move(message)) {}

} // namespace ipusim
