#include "sim/report/notes.hpp"

#include <sstream>
#include <vector>

#include "sim/io/input_error.hpp"
#include "sim/io/input_file.hpp"
#include "sim/report/svg_chart.hpp"

namespace ipusim::report {

namespace {

// Notes are prose: a megabyte is far more than a person writes, and bounds the page.
constexpr std::size_t kMaxNotesBytes = std::size_t{1} << 20;

// Escaped text with `code` spans and **bold**; an unmatched marker stays as text.
std::string inline_html(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '`') {
      const auto end = text.find('`', i + 1);
      if (end != std::string::npos) {
        out += "<code>" + chart::escape(text.substr(i + 1, end - i - 1)) + "</code>";
        i = end + 1;
        continue;
      }
    }
    if (text.compare(i, 2, "**") == 0) {
      const auto end = text.find("**", i + 2);
      if (end != std::string::npos && end > i + 2) {
        out += "<b>" + inline_html(text.substr(i + 2, end - i - 2)) + "</b>";
        i = end + 2;
        continue;
      }
    }
    out += chart::escape(text.substr(i, 1));
    ++i;
  }
  return out;
}

std::string trimmed(const std::string& line) {
  const auto first = line.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
}

} // namespace

Notes read_notes(const std::string& path) {
  Notes notes{path, read_input_file(path, path, "/", kMaxNotesBytes).text};
  if (!is_valid_utf8(notes.markdown))
    throw InputError(path, "/", "report.bad-notes", "is not UTF-8 text; save the notes as UTF-8 Markdown");
  if (notes.markdown.find('\0') != std::string::npos)
    throw InputError(path, "/", "report.bad-notes", "holds a NUL character (a binary file?); give a Markdown text file");
  return notes;
}

std::string notes_html(const std::string& markdown) {
  std::string out, paragraph;
  bool in_list = false, in_code = false;
  auto flush = [&] {
    if (!paragraph.empty()) out += "<p>" + inline_html(paragraph) + "</p>\n";
    paragraph.clear();
    if (in_list) out += "</ul>\n";
    in_list = false;
  };
  std::istringstream lines(markdown);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trimmed(line);
    if (t.rfind("```", 0) == 0) {
      if (in_code) out += "</code></pre>\n";
      else {
        flush();
        out += "<pre><code>";
      }
      in_code = !in_code;
      continue;
    }
    if (in_code) {
      out += chart::escape(line) + "\n";
      continue;
    }
    if (t.empty()) {
      flush();
      continue;
    }
    std::size_t hashes = 0;
    while (hashes < t.size() && t[hashes] == '#') ++hashes;
    if (hashes >= 1 && hashes <= 4 && hashes < t.size() && t[hashes] == ' ') {
      flush();
      // The page's own headings are h1 (title) and h2 (sections): notes' go below them.
      const std::string h = "h" + std::to_string(hashes + 2);
      out += "<" + h + ">" + inline_html(trimmed(t.substr(hashes))) + "</" + h + ">\n";
      continue;
    }
    if (t.size() > 2 && (t[0] == '-' || t[0] == '*') && t[1] == ' ') {
      if (!paragraph.empty()) {
        out += "<p>" + inline_html(paragraph) + "</p>\n";
        paragraph.clear();
      }
      if (!in_list) out += "<ul>\n";
      in_list = true;
      out += "<li>" + inline_html(trimmed(t.substr(2))) + "</li>\n";
      continue;
    }
    if (in_list) flush();
    paragraph += (paragraph.empty() ? "" : " ") + t;
  }
  if (in_code) out += "</code></pre>\n";
  flush();
  return out;
}

} // namespace ipusim::report
