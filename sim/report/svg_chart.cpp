#include "sim/report/svg_chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>

namespace ipusim::chart {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string coord(double value) {
  if (!std::isfinite(value)) value = 0;
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  if (std::string_view(buffer) == "-0.00") return "0.00";
  return buffer;
}

namespace {

std::string trim_number(double value, int significant) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*g", significant, value);
  return buffer;
}

} // namespace

std::string short_number(double value) {
  const double a = std::fabs(value);
  if (a < 1e-12) return "0";
  if (a >= 1e12) return trim_number(value / 1e12, 3) + "T";
  if (a >= 1e9) return trim_number(value / 1e9, 3) + "G";
  if (a >= 1e6) return trim_number(value / 1e6, 3) + "M";
  if (a >= 1e4) return trim_number(value / 1e3, 3) + "k";
  if (a >= 1e3) return trim_number(value, 4);  // 1000 .. 9999 read better in full
  return trim_number(value, 3);
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi < lo) std::swap(lo, hi);
  if (hi - lo <= 0) {
    if (hi == 0) return {0, 1};
    const double pad = std::fabs(hi) * 0.5;
    lo = lo >= 0 && lo - pad < 0 ? 0 : lo - pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double normalized = raw / magnitude;
  const double step = (normalized < 1.5 ? 1 : normalized < 3 ? 2 : normalized < 7 ? 5 : 10) * magnitude;
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double i = first; i <= last + 0.5; i += 1) {
    double t = i * step;
    if (std::fabs(t) < step * 1e-9) t = 0;
    ticks.push_back(t);
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0) || !(hi > 0)) return {};
  if (hi < lo) std::swap(lo, hi);
  const int first_decade = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last_decade = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const bool only_decades = last_decade - first_decade >= 4;
  const double tolerance = 1e-9;
  std::vector<double> ticks;
  for (int d = first_decade; d <= last_decade; ++d) {
    const double base = std::pow(10.0, d);
    for (double m : {1.0, 2.0, 5.0}) {
      if (only_decades && m != 1.0) continue;
      const double t = m * base;
      if (t >= lo * (1 - tolerance) && t <= hi * (1 + tolerance)) ticks.push_back(t);
    }
  }
  if (ticks.size() < 2) {
    if (ticks.empty() || ticks.front() > lo * (1 + tolerance)) ticks.insert(ticks.begin(), lo);
    if (ticks.back() < hi * (1 - tolerance)) ticks.push_back(hi);
  }
  return ticks;
}

double text_width(std::string_view text, double font_size) {
  std::size_t characters = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++characters;  // count UTF-8 code points
  return static_cast<double>(characters) * font_size * 0.6;
}

const std::string& palette(std::size_t index) {
  static const std::array<std::string, 8> colors = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                                    "#56B4E9", "#D55E00", "#F0E442", "#000000"};
  return colors[index % colors.size()];
}

std::string category_color(std::string_view category) {
  static const std::map<std::string, std::string, std::less<>> fixed = {
      {"compute", "#0072B2"}, {"exchange", "#E69F00"}, {"copy", "#CC79A7"}, {"link", "#CC79A7"},
      {"sync", "#666666"},    {"host-io", "#009E73"},  {"wait", "#C8C8C8"}, {"idle", "#E6E6E6"},
      {"update", "#56B4E9"},  {"streaming-memory", "#882255"},
      // Idle time by cause (docs/step-time.md), in the trace and the time breakdown.
      {"idle-fill-flush", "#BDBDBD"}, {"idle-imbalance", "#8C6D62"}, {"idle-copy-wait", "#E8D36B"},
      {"idle-update-wait", "#7F7F7F"}, {"idle-turn-wait", "#DCDCDC"}};
  if (auto it = fixed.find(category); it != fixed.end()) return it->second;
  std::uint32_t hash = 2166136261u;  // FNV-1a: stable across runs and platforms
  for (unsigned char c : category) hash = (hash ^ c) * 16777619u;
  static const std::array<std::string, 6> extra = {"#D55E00", "#F0E442", "#882255",
                                                   "#44AA99", "#117733", "#AA4499"};
  return extra[hash % extra.size()];
}

namespace {

constexpr const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";
constexpr const char* kAxisColor = "#444444";
constexpr const char* kGridColor = "#E3E3E3";
constexpr const char* kTextColor = "#222222";
constexpr const char* kErrorColor = "#D55E00";

constexpr double kTitleLine = 18;  // px between the lines of a wrapped title

} // namespace

// A word longer than a line stays whole on its own line.
std::vector<std::string> title_lines(const std::string& title, double width) {
  const double room = width - 24;
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start <= title.size()) {
    std::size_t end = title.find(' ', start);
    if (end == std::string::npos) end = title.size();
    const std::string word = title.substr(start, end - start);
    const std::string joined = line.empty() ? word : line + " " + word;
    if (!line.empty() && text_width(joined, 15) > room) {
      lines.push_back(line);
      line = word;
    } else {
      line = joined;
    }
    start = end + 1;
  }
  lines.push_back(line);
  return lines;
}

namespace {

// Pixels a wrapped title adds above the legend and the plot.
double title_extra(const std::string& title, double width) {
  return kTitleLine * static_cast<double>(title_lines(title, width).size() - 1);
}

// The frame moved down (and made taller) for a wrapped title.
Frame with_title(Frame f, const std::string& title) {
  const double extra = title_extra(title, f.width);
  f.top += extra;
  f.height += extra;
  return f;
}

class Svg {
public:
  Svg(double width, double height, const std::string& title) {
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + coord(width) + "\" height=\"" +
            coord(height) + "\" viewBox=\"0 0 " + coord(width) + " " + coord(height) + "\" font-family=\"" +
            kFont + "\" font-size=\"12\" role=\"img\">\n";
    out_ += "<title>" + escape(title) + "</title>\n";
    out_ += "<rect x=\"0\" y=\"0\" width=\"" + coord(width) + "\" height=\"" + coord(height) +
            "\" fill=\"#FFFFFF\"/>\n";
    const auto lines = title_lines(title, width);
    for (std::size_t i = 0; i < lines.size(); ++i)
      text(12, 22 + kTitleLine * static_cast<double>(i), lines[i], "start", 15, "font-weight=\"bold\"");
  }

  void text(double x, double y, std::string_view s, const char* anchor = "start", double size = 12,
            const std::string& extra = "") {
    out_ += "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" text-anchor=\"" + anchor + "\" font-size=\"" +
            short_number(size) + "\" fill=\"" + kTextColor + "\"" + (extra.empty() ? "" : " " + extra) + ">" +
            escape(s) + "</text>\n";
  }

  void line(double x1, double y1, double x2, double y2, const std::string& color, double width = 1,
            const std::string& extra = "") {
    out_ += "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" + coord(y2) +
            "\" stroke=\"" + color + "\" stroke-width=\"" + short_number(width) + "\"" +
            (extra.empty() ? "" : " " + extra) + "/>\n";
  }

  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "",
            const std::string& tooltip = "") {
    out_ += "<rect" + extra + " x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) +
            "\" height=\"" + coord(h) + "\" fill=\"" + fill + "\"";
    if (tooltip.empty()) out_ += "/>\n";
    else out_ += "><title>" + escape(tooltip) + "</title></rect>\n";
  }

  void raw(const std::string& s) { out_ += s; }

  std::string finish() {
    out_ += "</svg>\n";
    return std::move(out_);
  }

private:
  std::string out_;
};

struct LegendItem {
  std::string name, color;
  enum Kind { Box, Line, Cross, Dashed, Hollow } kind = Box;
  std::string dash{};  // Line: its stroke-dasharray
};

// Legend lines laid out left to right from frame.left, wrapping at the right edge.
std::vector<std::vector<LegendItem>> legend_lines(const std::vector<LegendItem>& items, double left, double right) {
  std::vector<std::vector<LegendItem>> lines;
  double x = left;
  for (const LegendItem& item : items) {
    const double w = 18 + text_width(item.name, 12) + 16;
    if (lines.empty() || (x + w > right && !lines.back().empty())) {
      lines.emplace_back();
      x = left;
    }
    lines.back().push_back(item);
    x += w;
  }
  return lines;
}

void draw_legend(Svg& svg, const std::vector<std::vector<LegendItem>>& lines, double left, double y0) {
  for (std::size_t l = 0; l < lines.size(); ++l) {
    double x = left;
    const double y = y0 + 16 * static_cast<double>(l);
    for (const LegendItem& item : lines[l]) {
      switch (item.kind) {
        case LegendItem::Box: svg.rect(x, y - 10, 12, 12, item.color); break;
        case LegendItem::Line:
          svg.line(x - 2, y - 4, x + 16, y - 4, item.color, 2.5,
                   item.dash.empty() ? "" : "stroke-dasharray=\"" + item.dash + "\"");
          svg.raw("<circle cx=\"" + coord(x + 7) + "\" cy=\"" + coord(y - 4) + "\" r=\"3.5\" fill=\"" + item.color +
                  "\"/>\n");
          break;
        case LegendItem::Dashed: svg.line(x, y - 4, x + 14, y - 4, item.color, 1.5, "stroke-dasharray=\"4 2\""); break;
        case LegendItem::Hollow:
          svg.raw("<circle cx=\"" + coord(x + 6) + "\" cy=\"" + coord(y - 4) + "\" r=\"5\" fill=\"#FFFFFF\" stroke=\"" +
                  item.color + "\" stroke-width=\"2\"/>\n");
          break;
        case LegendItem::Cross:
          svg.line(x + 2, y - 9, x + 11, y, item.color, 2);
          svg.line(x + 2, y, x + 11, y - 9, item.color, 2);
          break;
      }
      svg.text(x + 18, y, item.name);
      x += 18 + text_width(item.name, 12) + 16;
    }
  }
}

// Grows the top margin (and the height) to fit a wrapped legend.
Frame with_legend(Frame f, std::size_t legend_line_count) {
  if (legend_line_count > 1) {
    const double extra = 16 * static_cast<double>(legend_line_count - 1);
    f.top += extra;
    f.height += extra;
  }
  return f;
}

struct YAxis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  double pixel(const Frame& f, double v) const {
    return f.top + f.plot_height() - (v - lo) / (hi - lo) * f.plot_height();
  }
};

YAxis y_axis_for(double data_lo, double data_hi) {
  YAxis a;
  a.ticks = nice_ticks(std::min(0.0, data_lo), std::max(0.0, data_hi));
  a.lo = a.ticks.front();
  a.hi = a.ticks.back();
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  return a;
}

void draw_y_axis(Svg& svg, const Frame& f, const YAxis& a, const TickFormat& format, const std::string& label) {
  for (double t : a.ticks) {
    const double y = a.pixel(f, t);
    svg.line(f.left, y, f.left + f.plot_width(), y, kGridColor);
    svg.text(f.left - 8, y + 4, format ? format(t) : short_number(t), "end", 11);
  }
  svg.line(f.left, f.top, f.left, f.top + f.plot_height(), kAxisColor);
  const double cy = f.top + f.plot_height() / 2;
  svg.text(18, cy, label, "middle", 12, "transform=\"rotate(-90 18 " + coord(cy) + ")\"");
}

// Category labels under bands: horizontal when they fit, else slanted; when even slanted
// neighbours would touch (many narrow bands: 64 IPUs), every k-th label, the others marked by
// a tick, so that no two labels overlap. Slanted by 25 degrees, two neighbours' parallel
// baselines lie band x sin 25 deg apart, which must hold a line of text (1.3 x the font size).
void draw_band_labels(Svg& svg, const Frame& f, const std::vector<std::string>& labels) {
  constexpr double kLabelFont = 12, kSlantDegrees = 25;
  const double band = f.plot_width() / static_cast<double>(std::max<std::size_t>(1, labels.size()));
  double widest = 0;
  for (const auto& l : labels) widest = std::max(widest, text_width(l, kLabelFont));
  const bool slant = widest > band - 6;
  const double needed = slant ? 1.3 * kLabelFont / std::sin(kSlantDegrees * 3.14159265358979323846 / 180) : widest + 6;
  const std::size_t stride = static_cast<std::size_t>(std::max(1.0, std::ceil(needed / band)));
  const double baseline = f.top + f.plot_height();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const double cx = f.left + band * (static_cast<double>(i) + 0.5);
    if (stride > 1) svg.line(cx, baseline, cx, baseline + (i % stride == 0 ? 5 : 3), kAxisColor);
    if (i % stride != 0) continue;
    if (slant)
      svg.text(cx, baseline + 16, labels[i], "end", kLabelFont,
               "transform=\"rotate(-25 " + coord(cx) + " " + coord(baseline + 16) + ")\"");
    else svg.text(cx, baseline + 20, labels[i], "middle");
  }
  svg.line(f.left, baseline, f.left + f.plot_width(), baseline, kAxisColor);
}

double max_finite(const std::vector<double>& values, double fallback) {
  double m = fallback;
  for (double v : values)
    if (std::isfinite(v)) m = std::max(m, v);
  return m;
}

} // namespace

// ---------------------------------------------------------------- bar chart

double bar_axis_max(const BarChart& chart) {
  const Frame f = with_title(chart.frame, chart.title);
  std::size_t note_lines = 0;
  double max_value = 0;
  for (const Bar& b : chart.bars) {
    note_lines = std::max(note_lines, b.notes.size());
    if (std::isfinite(b.value)) max_value = std::max(max_value, b.value);
  }
  // Leave room above the tallest bar for its notes (14 px a line).
  const double room = note_lines ? 14 * static_cast<double>(note_lines) + 4 : 0;
  const double scaled = max_value * f.plot_height() / std::max(1.0, f.plot_height() - room);
  return y_axis_for(0, scaled).hi;
}

std::vector<BarGeometry> bar_geometry(const BarChart& chart) {
  const Frame f = with_title(chart.frame, chart.title);
  const double hi = bar_axis_max(chart);
  const double band = f.plot_width() / static_cast<double>(std::max<std::size_t>(1, chart.bars.size()));
  const double width = std::min(band * 0.6, 140.0);
  std::vector<BarGeometry> out;
  for (std::size_t i = 0; i < chart.bars.size(); ++i) {
    const double v = std::isfinite(chart.bars[i].value) ? std::max(0.0, chart.bars[i].value) : 0;
    const double h = v / hi * f.plot_height();
    out.push_back({f.left + band * static_cast<double>(i) + (band - width) / 2, f.top + f.plot_height() - h, width, h});
  }
  return out;
}

std::string render(const BarChart& chart) {
  const Frame f = with_title(chart.frame, chart.title);
  Svg svg(f.width, f.height, chart.title);
  YAxis axis = y_axis_for(0, bar_axis_max(chart));
  draw_y_axis(svg, f, axis, chart.y_format, chart.y_label);
  const auto geometry = bar_geometry(chart);
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    const BarGeometry& g = geometry[i];
    labels.push_back(b.label);
    svg.rect(g.x, g.y, g.width, g.height, b.color.empty() ? palette(i) : b.color, " class=\"bar\"");
    for (std::size_t k = 0; k < b.notes.size(); ++k) {
      const double y = g.y - 6 - 14 * static_cast<double>(b.notes.size() - 1 - k);
      svg.text(g.x + g.width / 2, y, b.notes[k], "middle", 12, k == 0 ? "font-weight=\"bold\"" : "");
    }
  }
  draw_band_labels(svg, f, labels);
  return svg.finish();
}

// ---------------------------------------------------------------- grouped bars

std::string render(const GroupedBarChart& chart) {
  std::vector<LegendItem> items;
  for (std::size_t s = 0; s < chart.series.size(); ++s)
    items.push_back({chart.series[s].name, chart.series[s].color.empty() ? palette(s) : chart.series[s].color});
  // Markers that all say the same go into the legend once instead of over the bars.
  std::string common_marker;
  bool markers_agree = true;
  for (const auto& m : chart.markers)
    if (m) {
      if (common_marker.empty()) common_marker = m->label;
      markers_agree = markers_agree && m->label == common_marker;
    }
  const bool marker_in_legend = !common_marker.empty() && markers_agree;
  if (marker_in_legend) items.push_back({common_marker, kErrorColor, LegendItem::Dashed});
  const auto legend = legend_lines(items, chart.frame.left, chart.frame.width - chart.frame.right);
  const Frame f = with_legend(with_title(chart.frame, chart.title), legend.size());
  Svg svg(f.width, f.height, chart.title);
  draw_legend(svg, legend, f.left, 42 + title_extra(chart.title, f.width));

  double max_value = chart.y_max;
  for (const BarSeries& s : chart.series) max_value = max_finite(s.values, max_value);
  for (const auto& m : chart.markers)
    if (m) max_value = std::max(max_value, m->value);
  const double room = chart.value_format ? 16 : 0;
  const YAxis axis = y_axis_for(0, max_value * f.plot_height() / std::max(1.0, f.plot_height() - room));
  draw_y_axis(svg, f, axis, chart.y_format, chart.y_label);

  const std::size_t groups = std::max<std::size_t>(1, chart.categories.size());
  const std::size_t n = std::max<std::size_t>(1, chart.series.size());
  const double band = f.plot_width() / static_cast<double>(groups);
  const double bar = std::min(band * 0.8 / static_cast<double>(n), 90.0);
  const double baseline = f.top + f.plot_height();
  for (std::size_t c = 0; c < chart.categories.size(); ++c) {
    const double x0 = f.left + band * static_cast<double>(c) + (band - bar * static_cast<double>(n)) / 2;
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
      const BarSeries& series = chart.series[s];
      if (c >= series.values.size() || !std::isfinite(series.values[c])) continue;
      const double v = std::max(0.0, series.values[c]);
      const double y = axis.pixel(f, v);
      const double x = x0 + bar * static_cast<double>(s);
      svg.rect(x, y, bar - 2, baseline - y, series.color.empty() ? palette(s) : series.color, " class=\"bar\"",
               series.name + " " + chart.categories[c] + ": " +
                   (chart.value_format ? chart.value_format(v) : short_number(v)));
      if (chart.value_format) {
        const std::string label = chart.value_format(v);
        if (text_width(label, 10) <= bar + 4) svg.text(x + (bar - 2) / 2, y - 4, label, "middle", 10);
      }
    }
    if (c < chart.markers.size() && chart.markers[c]) {
      const double y = axis.pixel(f, chart.markers[c]->value);
      const double left = f.left + band * static_cast<double>(c) + 4, right = left + band - 8;
      svg.line(left, y, right, y, kErrorColor, 1.5, "stroke-dasharray=\"6 3\"");
      if (!marker_in_legend)
        svg.text(left, y - 4, chart.markers[c]->label, "start", 10,
                 "stroke=\"#FFFFFF\" stroke-width=\"3\" paint-order=\"stroke\"");
    }
  }
  draw_band_labels(svg, f, chart.categories);
  return svg.finish();
}

// ---------------------------------------------------------------- line chart

namespace {

struct XScale {
  bool log = false;
  double lo = 0, hi = 1, left = 0, right = 1;
  double pixel(double x) const {
    const double t = log ? (std::log10(x) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (x - lo) / (hi - lo);
    return left + t * (right - left);
  }
};

XScale x_scale_for(const LineChart& chart, const Frame& f) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto take = [&](double x) {
    if (!std::isfinite(x) || (chart.log_x && x <= 0)) return;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  };
  for (const LineSeries& s : chart.series)
    for (const LinePoint& p : s.points) take(p.x);
  for (double x : chart.error_x) take(x);
  for (const Tick& t : chart.x_ticks) take(t.value);
  for (const Tick& t : chart.x_lines) take(t.value);
  if (!std::isfinite(lo)) lo = chart.log_x ? 1 : 0, hi = chart.log_x ? 10 : 1;
  if (hi <= lo) {
    if (chart.log_x) lo /= 2, hi *= 2;
    else lo -= 1, hi += 1;
  }
  const double pad = 16;
  return {chart.log_x, lo, hi, f.left + pad, f.left + f.plot_width() - pad};
}

std::vector<LegendItem> line_legend_items(const LineChart& chart) {
  std::vector<LegendItem> items;
  for (std::size_t s = 0; s < chart.series.size(); ++s)
    items.push_back({chart.series[s].name, chart.series[s].color.empty() ? palette(s) : chart.series[s].color,
                     LegendItem::Line, chart.series[s].dash});
  if (!chart.error_x.empty()) items.push_back({"failed point", kErrorColor, LegendItem::Cross});
  bool any_oom = false;
  for (const LineSeries& s : chart.series)
    for (const LinePoint& p : s.points) any_oom = any_oom || (p.out_of_memory && p.y);
  if (any_oom) items.push_back({"out of memory (not possible)", kTextColor, LegendItem::Hollow});
  return items;
}

// From 0 (or below) to at least y_max, spanning every finite point.
YAxis line_y_axis(const LineChart& chart) {
  double y_lo = 0, y_hi = std::max(0.0, chart.y_max);
  for (const LineSeries& s : chart.series)
    for (const LinePoint& p : s.points)
      if (p.y && std::isfinite(*p.y)) y_lo = std::min(y_lo, *p.y), y_hi = std::max(y_hi, *p.y);
  return y_axis_for(y_lo, y_hi);
}

// The chart's own ticks, or nice (log-scale: power-of-ten) ticks within the scale.
std::vector<Tick> line_x_ticks(const LineChart& chart, const XScale& xs) {
  std::vector<Tick> ticks = chart.x_ticks;
  if (ticks.empty()) {
    const auto values = chart.log_x ? log_ticks(xs.lo, xs.hi) : nice_ticks(xs.lo, xs.hi, 6);
    for (double v : values)
      if (v >= xs.lo - 1e-9 * std::fabs(xs.hi - xs.lo) && v <= xs.hi + 1e-9 * std::fabs(xs.hi - xs.lo))
        ticks.push_back({v, short_number(v)});
  }
  return ticks;
}

// Grid lines, tick labels (slanted when the chart's own names are long), the axis and its label.
void draw_line_x_axis(Svg& svg, const LineChart& chart, const Frame& f, const XScale& xs) {
  const double baseline = f.top + f.plot_height();
  const std::vector<Tick> ticks = line_x_ticks(chart, xs);
  double widest = 0;
  for (const Tick& t : ticks) widest = std::max(widest, text_width(t.label, 11));
  const double spacing = ticks.size() > 1 ? (xs.right - xs.left) / static_cast<double>(ticks.size() - 1) : 1e9;
  const bool slant = !chart.x_ticks.empty() && widest > spacing - 4 && widest > 3 * 11 * 0.6;  // long names
  double label_end = -1e9;  // right edge of the last horizontal label drawn
  for (const Tick& t : ticks) {
    const double x = xs.pixel(t.value);
    svg.line(x, f.top, x, baseline, kGridColor);
    svg.line(x, baseline, x, baseline + 5, kAxisColor);
    if (slant) {
      svg.text(x, baseline + 16, t.label, "end", 11,
               "transform=\"rotate(-25 " + coord(x) + " " + coord(baseline + 16) + ")\"");
    } else if (x - text_width(t.label, 11) / 2 >= label_end + 4) {  // skip a label that would touch the last
      svg.text(x, baseline + 18, t.label, "middle", 11);
      label_end = x + text_width(t.label, 11) / 2;
    }
  }
  svg.line(f.left, baseline, f.left + f.plot_width(), baseline, kAxisColor);
  svg.text(f.left + f.plot_width() / 2, f.height - 10,
           chart.x_label + (chart.log_x ? " (log scale)" : ""), "middle");
}

// A dashed line and a cross at the foot of each failed point, then the chart's marked x values.
void draw_x_marks(Svg& svg, const LineChart& chart, const Frame& f, const XScale& xs) {
  const double baseline = f.top + f.plot_height();
  for (double x : chart.error_x) {
    if (chart.log_x && x <= 0) continue;
    const double px = xs.pixel(x);
    svg.line(px, f.top, px, baseline, kErrorColor, 1, "stroke-dasharray=\"3 3\" stroke-opacity=\"0.6\"");
    svg.line(px - 5, baseline - 13, px + 5, baseline - 3, kErrorColor, 2, "class=\"error-mark\"");
    svg.line(px - 5, baseline - 3, px + 5, baseline - 13, kErrorColor, 2);
  }
  for (const Tick& t : chart.x_lines) {
    if (!std::isfinite(t.value) || (chart.log_x && t.value <= 0)) continue;
    const double px = xs.pixel(t.value);
    svg.line(px, f.top, px, baseline, kTextColor, 1.5, "class=\"x-line\" stroke-dasharray=\"6 4\"");
    svg.text(px - 4, f.top + 12, t.label, "end", 11);
  }
}

// The series' line, broken at missing, non-finite and out-of-memory points.
void draw_series_path(Svg& svg, const LineChart& chart, const LineSeries& series, const std::string& color,
                      const Frame& f, const XScale& xs, const YAxis& axis) {
  std::string path;
  bool pen_down = false;
  for (const LinePoint& p : series.points) {
    if (!p.y || !std::isfinite(*p.y) || (chart.log_x && p.x <= 0) || p.out_of_memory) {
      pen_down = false;  // a gap: the next point starts a new segment
      continue;
    }
    path += (pen_down ? " L" : (path.empty() ? "M" : " M")) + coord(xs.pixel(p.x)) + " " + coord(axis.pixel(f, *p.y));
    pen_down = true;
  }
  if (!path.empty())
    svg.raw("<path class=\"series\" d=\"" + path + "\" fill=\"none\" stroke=\"" + color +
            "\" stroke-width=\"2.5\" stroke-linejoin=\"round\"" +
            (series.dash.empty() ? "" : " stroke-dasharray=\"" + series.dash + "\"") + "/>\n");
}

// A dot with a tooltip at each point; out-of-memory points hollow and marked OOM.
void draw_series_points(Svg& svg, const LineChart& chart, const LineSeries& series, const std::string& color,
                        const Frame& f, const XScale& xs, const YAxis& axis) {
  for (const LinePoint& p : series.points) {
    if (!p.y || !std::isfinite(*p.y) || (chart.log_x && p.x <= 0)) continue;
    const std::string value = chart.y_format ? chart.y_format(*p.y) : short_number(*p.y);
    const double cx = xs.pixel(p.x), cy = axis.pixel(f, *p.y);
    if (p.out_of_memory) {
      svg.raw("<circle class=\"oom-mark\" cx=\"" + coord(cx) + "\" cy=\"" + coord(cy) +
              "\" r=\"5\" fill=\"#FFFFFF\" stroke=\"" + color + "\" stroke-width=\"2\"><title>" +
              escape(series.name + ": " + short_number(p.x) + " \xE2\x86\x92 " + value + ", out of memory") +
              "</title></circle>\n");
      svg.text(cx, cy - 9, "OOM", "middle", 10, "fill-opacity=\"0.9\"");
      continue;
    }
    svg.raw("<circle cx=\"" + coord(cx) + "\" cy=\"" + coord(cy) + "\" r=\"3.5\" fill=\"" + color + "\"><title>" +
            escape(series.name + ": " + short_number(p.x) + " \xE2\x86\x92 " + value) + "</title></circle>\n");
  }
}

} // namespace

double line_x_pixel(const LineChart& chart, double x) { return x_scale_for(chart, chart.frame).pixel(x); }

std::string render(const LineChart& chart) {
  const auto legend = legend_lines(line_legend_items(chart), chart.frame.left, chart.frame.width - chart.frame.right);
  const Frame f = with_legend(with_title(chart.frame, chart.title), legend.size());
  Svg svg(f.width, f.height, chart.title);
  draw_legend(svg, legend, f.left, 42 + title_extra(chart.title, f.width));

  const YAxis axis = line_y_axis(chart);
  draw_y_axis(svg, f, axis, chart.y_format, chart.y_label);
  const XScale xs = x_scale_for(chart, f);
  draw_line_x_axis(svg, chart, f, xs);
  draw_x_marks(svg, chart, f, xs);

  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    const LineSeries& series = chart.series[s];
    const std::string color = series.color.empty() ? palette(s) : series.color;
    draw_series_path(svg, chart, series, color, f, xs, axis);
    draw_series_points(svg, chart, series, color, f, xs, axis);
  }
  return svg.finish();
}

// ---------------------------------------------------------------- stacked bars

std::string render(const StackedBarChart& chart) {
  std::vector<LegendItem> items;
  for (std::size_t p = 0; p < chart.parts.size(); ++p)
    items.push_back({chart.parts[p].name, chart.parts[p].color.empty() ? palette(p) : chart.parts[p].color});
  const auto legend = legend_lines(items, chart.frame.left, chart.frame.width - chart.frame.right);
  const Frame f = with_legend(with_title(chart.frame, chart.title), legend.size());
  Svg svg(f.width, f.height, chart.title);
  draw_legend(svg, legend, f.left, 42 + title_extra(chart.title, f.width));

  std::vector<double> totals(chart.bars.size(), 0);
  for (const StackPart& part : chart.parts)
    for (std::size_t b = 0; b < chart.bars.size() && b < part.values.size(); ++b)
      if (std::isfinite(part.values[b]) && part.values[b] > 0) totals[b] += part.values[b];
  const YAxis axis = y_axis_for(0, max_finite(totals, 0));
  draw_y_axis(svg, f, axis, chart.y_format, chart.y_label);

  const double band = f.plot_width() / static_cast<double>(std::max<std::size_t>(1, chart.bars.size()));
  const double width = std::min(band * 0.7, 90.0);
  for (std::size_t b = 0; b < chart.bars.size(); ++b) {
    const double x = f.left + band * static_cast<double>(b) + (band - width) / 2;
    double below = 0;
    for (std::size_t p = 0; p < chart.parts.size(); ++p) {
      const StackPart& part = chart.parts[p];
      if (b >= part.values.size() || !std::isfinite(part.values[b]) || part.values[b] <= 0) continue;
      const double v = part.values[b];
      const double y_top = axis.pixel(f, below + v), y_bottom = axis.pixel(f, below);
      const std::string label = chart.value_format ? chart.value_format(v) : short_number(v);
      svg.rect(x, y_top, width, y_bottom - y_top, part.color.empty() ? palette(p) : part.color,
               " class=\"stack\" stroke=\"#FFFFFF\" stroke-width=\"0.5\"",
               chart.bars[b] + ", " + part.name + ": " + label);
      if (y_bottom - y_top >= 13 && text_width(label, 10) <= width - 4)
        svg.text(x + width / 2, (y_top + y_bottom) / 2 + 4, label, "middle", 10,
                 "stroke=\"#FFFFFF\" stroke-width=\"2.5\" paint-order=\"stroke\"");
      below += v;
    }
  }
  draw_band_labels(svg, f, chart.bars);
  return svg.finish();
}

// ---------------------------------------------------------------- Gantt chart

namespace {

struct GanttFrame {
  double left, right, top, bottom, width, height;
  double plot_width() const { return width - left - right; }
};

GanttFrame gantt_frame(const GanttChart& chart, std::size_t legend_line_count) {
  double widest = 0;
  for (const auto& r : chart.rows) widest = std::max(widest, text_width(r, 12));
  GanttFrame f{};
  f.left = std::clamp(widest + 16, 70.0, 280.0);
  f.right = 24;
  f.top = 56 + 16 * static_cast<double>(legend_line_count > 1 ? legend_line_count - 1 : 0) +
          title_extra(chart.title, chart.width);
  f.bottom = 48;
  f.width = chart.width;
  f.height = f.top + chart.row_height * static_cast<double>(chart.rows.size()) + f.bottom;
  return f;
}

double gantt_span(const GanttChart& chart) {
  double span = 0;
  for (const GanttEvent& e : chart.events) span = std::max(span, e.end);
  return span > 0 ? span : 1;
}

std::vector<std::string> gantt_categories(const GanttChart& chart) {
  std::vector<std::string> names;
  for (const GanttEvent& e : chart.events)
    if (std::find(names.begin(), names.end(), e.category) == names.end()) names.push_back(e.category);
  std::sort(names.begin(), names.end());
  return names;
}

// Time to pixels across the plot.
struct GanttXScale {
  double left, span, width;
  double px(double t) const { return left + std::clamp(t / span, 0.0, 1.0) * width; }
};

// Each row's events, in time order (ties: the shorter first, then by category).
std::vector<std::vector<const GanttEvent*>> events_by_row(const GanttChart& chart) {
  std::vector<std::vector<const GanttEvent*>> by_row(chart.rows.size());
  for (const GanttEvent& e : chart.events)
    if (e.row < by_row.size() && e.end >= e.start) by_row[e.row].push_back(&e);
  for (auto& row : by_row)
    std::stable_sort(row.begin(), row.end(), [](const GanttEvent* a, const GanttEvent* b) {
      if (a->start != b->start) return a->start < b->start;
      if (a->end != b->end) return a->end < b->end;
      return a->category < b->category;
    });
  return by_row;
}

// Busy share of a merged rectangle, to the nearest eighth (gaps under a pixel were bridged).
double eighths(double busy, double width) {
  return width < 1 ? 1.0 : std::clamp(std::round(busy / width * 8) / 8, 0.125, 1.0);
}

// Row r's events as rectangles, an event under a pixel wide (or following one) merged into the
// previous rectangle when of its category and within a pixel of it.
void add_merged_rects(const GanttChart& chart, const GanttXScale& xs, std::size_t r,
                      const std::vector<const GanttEvent*>& events, std::vector<GanttRect>& rects) {
  auto label = [&](const GanttEvent& e) {
    return e.label.empty() && chart.label_of ? chart.label_of(static_cast<std::size_t>(&e - chart.events.data()))
                                             : e.label;
  };
  bool open = false;
  GanttRect current{};
  double busy = 0, covered_to = 0;  // pixels covered by the merged events, without double counting
  auto close = [&] {
    if (current.events > 1) current.coverage = eighths(busy, current.x1 - current.x0);
    rects.push_back(current);
  };
  for (const GanttEvent* e : events) {
    const double x0 = xs.px(e->start), x1 = xs.px(e->end);
    const bool narrow = x1 - x0 < 1 || current.x1 - current.x0 < 1;
    if (open && e->category == current.category && x0 <= current.x1 + 1 && narrow) {
      busy += std::max(0.0, x1 - std::max(x0, covered_to));
      covered_to = std::max(covered_to, x1);
      current.x1 = std::max(current.x1, x1);
      ++current.events;
      current.label.clear();
      continue;
    }
    if (open) close();
    current = {r, x0, x1, e->category, 1, label(*e), 1.0};
    busy = x1 - x0;
    covered_to = x1;
    open = true;
  }
  if (open) close();
}

// One row cut into `bucket`-pixel buckets: the pixels each category covers in each, and how
// many events touch it.
struct RowBuckets {
  std::vector<std::map<std::string, double>> cover;
  std::vector<std::size_t> counts;
};

RowBuckets bucket_row(const std::vector<const GanttEvent*>& events, const GanttXScale& xs, double bucket,
                      std::size_t buckets) {
  RowBuckets out{std::vector<std::map<std::string, double>>(buckets), std::vector<std::size_t>(buckets, 0)};
  for (const GanttEvent* e : events) {
    const double x0 = xs.px(e->start) - xs.left, x1 = std::max(xs.px(e->end) - xs.left, x0 + 1e-6);
    const auto b0 = std::min(static_cast<std::size_t>(std::floor(x0 / bucket)), buckets - 1);
    const auto b1 = std::min(static_cast<std::size_t>(std::floor(x1 / bucket)), buckets - 1);
    for (std::size_t b = b0; b <= b1; ++b) {
      const double lo = std::max(x0, static_cast<double>(b) * bucket);
      const double hi = std::min(x1, static_cast<double>(b + 1) * bucket);
      out.cover[b][e->category] += std::max(hi - lo, 1e-9);
      ++out.counts[b];
    }
  }
  return out;
}

// Row r's buckets as rectangles: each shows the category that covers most of it, with an
// opacity telling how much of it is busy (to the nearest eighth); runs of equal buckets merged.
void add_bucket_rects(const RowBuckets& row, std::size_t r, const GanttXScale& xs, double bucket,
                      std::vector<GanttRect>& rects) {
  bool open = false;
  GanttRect current{};
  for (std::size_t b = 0; b < row.cover.size(); ++b) {
    if (row.cover[b].empty()) {
      if (open) rects.push_back(current);
      open = false;
      continue;
    }
    const auto best = std::max_element(row.cover[b].begin(), row.cover[b].end(), [](const auto& a, const auto& c) {
      return a.second < c.second;  // ties: the first name in order wins
    });
    double busy = 0;
    for (const auto& [category, width] : row.cover[b]) busy += width;
    const double x0 = xs.left + static_cast<double>(b) * bucket;
    const double x1 = std::min(xs.left + xs.width, x0 + bucket);
    const double coverage = std::clamp(std::round(busy / (x1 - x0) * 8) / 8, 0.125, 1.0);
    if (open && current.category == best->first && current.coverage == coverage) {
      current.x1 = x1;
      current.events += row.counts[b];
      continue;
    }
    if (open) rects.push_back(current);
    current = {r, x0, x1, best->first, row.counts[b], "", coverage};
    open = true;
  }
  if (open) rects.push_back(current);
}

} // namespace

std::vector<GanttRect> gantt_rects(const GanttChart& chart) {
  const GanttFrame f = gantt_frame(chart, 1);
  const GanttXScale xs{f.left, gantt_span(chart), f.plot_width()};
  const auto by_row = events_by_row(chart);
  std::vector<GanttRect> rects;
  for (std::size_t r = 0; r < by_row.size(); ++r) add_merged_rects(chart, xs, r, by_row[r], rects);
  if (rects.size() <= chart.max_rects || chart.max_rects == 0) return rects;

  // Still too many: cut each row into equal pixel buckets (add_bucket_rects). The bucket
  // doubles from 1 px until the count fits.
  for (double bucket = 1;; bucket *= 2) {
    const auto buckets = static_cast<std::size_t>(std::ceil(xs.width / bucket));
    std::vector<GanttRect> coarse;
    for (std::size_t r = 0; r < by_row.size(); ++r)
      add_bucket_rects(bucket_row(by_row[r], xs, bucket, buckets), r, xs, bucket, coarse);
    if (coarse.size() <= chart.max_rects || bucket >= xs.width) return coarse;
  }
}

std::string render(const GanttChart& chart) {
  std::vector<LegendItem> items;
  for (const auto& c : gantt_categories(chart)) items.push_back({c, category_color(c)});
  const auto first = gantt_frame(chart, 1);
  const auto legend = legend_lines(items, first.left, chart.width - first.right);
  const GanttFrame f = gantt_frame(chart, legend.size());  // gantt_rects' columns do not depend on the legend
  Svg svg(f.width, f.height, chart.title);
  draw_legend(svg, legend, f.left, 42 + title_extra(chart.title, f.width));

  const double pw = f.plot_width();
  const double span = gantt_span(chart);
  const double baseline = f.top + chart.row_height * static_cast<double>(chart.rows.size());
  for (std::size_t r = 0; r < chart.rows.size(); ++r) {
    const double y = f.top + chart.row_height * static_cast<double>(r);
    if (r % 2 == 1) svg.rect(f.left, y, pw, chart.row_height, "#F5F5F5");
    svg.text(f.left - 8, y + chart.row_height / 2 + 4, chart.rows[r], "end");
  }
  // Time axis in a unit that keeps tick labels short.
  const double scale = span < 1e-3 ? 1e6 : span < 1 ? 1e3 : 1;
  const char* unit = span < 1e-3 ? "us" : span < 1 ? "ms" : "s";
  for (double t : nice_ticks(0, span * scale, 8)) {
    if (t > span * scale * (1 + 1e-9)) continue;
    const double x = f.left + t / (span * scale) * pw;
    svg.line(x, f.top, x, baseline, kGridColor);
    svg.line(x, baseline, x, baseline + 5, kAxisColor);
    svg.text(x, baseline + 18, short_number(t), "middle", 11);
  }
  svg.line(f.left, baseline, f.left + pw, baseline, kAxisColor);
  svg.text(f.left + pw / 2, f.height - 10, std::string("time since the start of the step (") + unit + ")", "middle");

  for (const GanttRect& r : gantt_rects(chart)) {
    const double y = f.top + chart.row_height * static_cast<double>(r.row) + 3;
    const double w = std::max(r.x1 - r.x0, 0.75);
    std::string extra = w >= 4 && r.events == 1 ? " stroke=\"#FFFFFF\" stroke-width=\"0.5\"" : "";
    if (r.coverage < 1) extra += " fill-opacity=\"" + short_number(r.coverage) + "\"";
    svg.rect(r.x0, y, w, chart.row_height - 6, category_color(r.category), extra, r.label);
  }
  return svg.finish();
}

} // namespace ipusim::chart
