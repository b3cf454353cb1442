#pragma once
// Page assembly: a report's HTML page and its Markdown twin written side by side
// (headings, paragraphs, findings, the user's notes, figures, tables), and the page's
// frame (title, contents, inline CSS).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "sim/report/report.hpp"

namespace ipusim::report {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Markdown text with its special characters escaped (and HTML's, for the same text in both).
std::string md_escape(const std::string& text);
// A file-name-safe form of a title: lower case letters, digits and dashes.
std::string slug(const std::string& text);

class Builder {
public:
  explicit Builder(std::string title) : title_(std::move(title)) {}

  void heading(int level, const std::string& text, const std::string& id = "");
  void paragraph(const std::string& text, const std::string& css_class = "");
  // The findings that open a section: each sentence computed from the data.
  void findings(const std::vector<std::string>& sentences);
  // Already-made HTML and Markdown (the user's notes), added as they are.
  void raw(const std::string& html, const std::string& markdown);
  void figure(const std::string& name, const std::string& title, const std::string& svg,
              const std::vector<std::string>& caption, bool wide = false);
  void table(const Table& t, const std::string& caption = "");
  void open_section(const std::string& id);
  void close_section();
  Document finish(const std::vector<std::pair<std::string, std::string>>& toc, const std::string& intro_html,
                  const std::string& intro_md);

private:
  void close_figures();

  std::string title_;
  std::string html_, md_;
  std::vector<Figure> figures_;
  std::size_t figure_count_ = 0;
  bool in_figures_ = false;
};

} // namespace ipusim::report
