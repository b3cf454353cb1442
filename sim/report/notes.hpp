#pragma once
// `ipusim report --notes FILE.md`: the user's own Markdown text, added to report.md as
// it is and to report.html escaped and simply rendered (headings, paragraphs, lists,
// fenced code, `code` and **bold**; everything else shows as text).
#include <string>

namespace ipusim::report {

struct Notes {
  std::string source;    // the path as given
  std::string markdown;  // the file's text, unchanged
};

// Throws InputError naming the file: file.* rules of read_input_file, and
// report.bad-notes for text that is not UTF-8 or holds NUL characters.
Notes read_notes(const std::string& path);

// The notes as HTML: every character of the user's text escaped.
std::string notes_html(const std::string& markdown);

} // namespace ipusim::report
