#include "sim/report/page.hpp"

#include <cstdio>

#include "sim/report/svg_chart.hpp"

namespace ipusim::report {

namespace {

bool looks_numeric(const std::string& cell) {
  if (cell.empty() || cell == "-") return false;
  const char c = cell.front();
  return (c >= '0' && c <= '9') || ((c == '-' || c == '+') && cell.size() > 1);
}

std::string css() {
  return "body{font-family:\"DejaVu Sans\",Helvetica,Arial,sans-serif;color:#222;background:#fff;margin:0 auto;"
         "max-width:1320px;padding:16px 24px 48px;line-height:1.4}\n"
         "h1{font-size:26px;margin:8px 0 4px}h2{font-size:21px;margin:36px 0 8px;padding-top:8px;"
         "border-top:2px solid #ddd}h3{font-size:17px;margin:24px 0 8px}\n"
         "p.inputs,p.meta{color:#555;font-size:13px;margin:4px 0}p.note{background:#f7f7f7;"
         "border-left:4px solid #bbb;padding:6px 10px}\n"
         "p.finding{background:#eef5fb;border-left:4px solid #0072B2;padding:8px 12px;font-size:15px}\n"
         "section.notes{background:#fffdf3;border:1px solid #e8dfb0;padding:4px 16px;margin:12px 0}\n"
         "nav{font-size:14px;margin:12px 0}nav ul{margin:4px 0;padding-left:22px;columns:2}\n"
         ".figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:18px;margin:12px 0}\n"
         "figure{margin:0;border:1px solid #e2e2e2;border-radius:4px;padding:8px;background:#fff}\n"
         "figure.wide{grid-column:1/-1}figure svg{display:block;max-width:100%;height:auto;margin:0 auto}\n"
         "figcaption{font-size:12px;color:#555;margin-top:6px;overflow-wrap:anywhere}\n"
         ".table{overflow-x:auto;margin:12px 0}table{border-collapse:collapse;font-size:13px}\n"
         "caption{text-align:left;font-weight:bold;padding:4px 0}\n"
         "th,td{border:1px solid #d8d8d8;padding:4px 8px;text-align:left;vertical-align:top}\n"
         "thead th{background:#f0f0f0}tbody tr:nth-child(even){background:#fafafa}\n"
         "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n";
}

} // namespace

std::string slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    const bool upper = c >= 'A' && c <= 'Z';
    if (alnum || upper) out += upper ? static_cast<char>(c - 'A' + 'a') : c;
    else if (!out.empty() && out.back() != '-') out += '-';
    if (out.size() >= 48) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "figure" : out;
}

std::string md_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '|': out += "\\|"; break;
      case '\\': case '*': case '_': case '`': case '[': case ']': out += '\\'; out += c; break;
      case '\n': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

void Builder::heading(int level, const std::string& text, const std::string& id) {
  close_figures();
  const std::string h = "h" + std::to_string(level);
  html_ += "<" + h + (id.empty() ? "" : " id=\"" + chart::escape(id) + "\"") + ">" + chart::escape(text) + "</" + h +
           ">\n";
  md_ += std::string(static_cast<std::size_t>(level), '#') + " " + md_escape(text) + "\n\n";
}

void Builder::paragraph(const std::string& text, const std::string& css_class) {
  close_figures();
  html_ += "<p" + (css_class.empty() ? "" : " class=\"" + css_class + "\"") + ">" + chart::escape(text) + "</p>\n";
  md_ += md_escape(text) + "\n\n";
}

void Builder::findings(const std::vector<std::string>& sentences) {
  if (sentences.empty()) return;
  close_figures();
  std::string text;
  for (const std::string& s : sentences) text += (text.empty() ? "" : " ") + s;
  html_ += "<p class=\"finding\"><b>Finding.</b> " + chart::escape(text) + "</p>\n";
  md_ += "**Finding.** " + md_escape(text) + "\n\n";
}

void Builder::raw(const std::string& html, const std::string& markdown) {
  close_figures();
  html_ += html;
  md_ += markdown;
}

void Builder::figure(const std::string& name, const std::string& title, const std::string& svg,
            const std::vector<std::string>& caption, bool wide) {
  if (!in_figures_) {
    html_ += "<div class=\"figures\">\n";
    in_figures_ = true;
  }
  ++figure_count_;
  char number[16];
  std::snprintf(number, sizeof number, "%02zu", figure_count_);
  const std::string file = "figures/" + std::string(number) + "-" + slug(name) + ".svg";
  figures_.push_back({file, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg});
  html_ += std::string("<figure") + (wide ? " class=\"wide\"" : "") + " id=\"figure-" + number + "\">\n" + svg +
           "<figcaption><b>Figure " + std::to_string(figure_count_) + ".</b> " + chart::escape(title);
  for (const std::string& line : caption) html_ += "<br>" + chart::escape(line);
  html_ += "</figcaption>\n</figure>\n";
  md_ += "![Figure " + std::to_string(figure_count_) + ": " + md_escape(title) + "](" + file + ")\n\n";
  md_ += "*Figure " + std::to_string(figure_count_) + ". " + md_escape(title) + "*";
  for (const std::string& line : caption) md_ += "  \n" + md_escape(line);
  md_ += "\n\n";
}

void Builder::table(const Table& t, const std::string& caption) {
  close_figures();
  html_ += "<div class=\"table\"><table>\n";
  if (!caption.empty()) html_ += "<caption>" + chart::escape(caption) + "</caption>\n";
  html_ += "<thead><tr>";
  for (const auto& h : t.header) html_ += "<th>" + chart::escape(h) + "</th>";
  html_ += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    html_ += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool numeric = i > 0 && looks_numeric(row[i]);
      html_ += std::string(i == 0 ? "<th scope=\"row\">" : numeric ? "<td class=\"num\">" : "<td>") +
               chart::escape(row[i]) + (i == 0 ? "</th>" : "</td>");
    }
    html_ += "</tr>\n";
  }
  html_ += "</tbody></table></div>\n";
  if (!caption.empty()) md_ += "**" + md_escape(caption) + "**\n\n";
  md_ += "|";
  for (const auto& h : t.header) md_ += " " + md_escape(h) + " |";
  md_ += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i) {  // numbers right-aligned, text left
    bool numeric = i > 0;
    for (const auto& row : t.rows)
      if (i < row.size() && row[i] != "-") numeric = numeric && looks_numeric(row[i]);
    md_ += numeric ? " ---: |" : " --- |";
  }
  md_ += "\n";
  for (const auto& row : t.rows) {
    md_ += "|";
    for (const auto& cell : row) md_ += " " + md_escape(cell) + " |";
    md_ += "\n";
  }
  md_ += "\n";
}

void Builder::open_section(const std::string& id) {
  close_figures();
  html_ += "<section id=\"" + chart::escape(id) + "\">\n";
}
void Builder::close_section() {
  close_figures();
  html_ += "</section>\n";
}

Document Builder::finish(const std::vector<std::pair<std::string, std::string>>& toc, const std::string& intro_html,
                const std::string& intro_md) {
  close_figures();
  Document d;
  d.html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
           "<meta name=\"generator\" content=\"ipusim report\">\n<title>" +
           chart::escape(title_) + "</title>\n<style>\n" + css() + "</style>\n</head>\n<body>\n<header>\n<h1>" +
           chart::escape(title_) + "</h1>\n" + intro_html;
  if (!toc.empty()) {
    d.html += "<nav><b>Contents</b><ul>\n";
    for (const auto& [id, text] : toc)
      d.html += "<li><a href=\"#" + chart::escape(id) + "\">" + chart::escape(text) + "</a></li>\n";
    d.html += "</ul></nav>\n";
  }
  d.html += "</header>\n<main>\n" + html_ + "</main>\n</body>\n</html>\n";
  d.markdown = "# " + md_escape(title_) + "\n\n" + intro_md + md_;
  d.figures = std::move(figures_);
  return d;
}

void Builder::close_figures() {
  if (in_figures_) html_ += "</div>\n";
  in_figures_ = false;
}

} // namespace ipusim::report
