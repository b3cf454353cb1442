#pragma once
// A small, dependency-free SVG plotting module: bar, grouped bar, line and Gantt
// charts rendered as standalone <svg> elements (no scripts, no external fonts or
// stylesheets), so they can be inlined into HTML or saved as .svg files.
//
// Output is deterministic: coordinates are printed with two decimals, colours and
// ordering come only from the inputs. Every piece of text is XML-escaped.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ipusim::chart {

// Escapes & < > " ' for use in XML/HTML text and attribute values.
std::string escape(std::string_view text);

// A coordinate with two decimals ("12.50"); -0 prints as "0.00".
std::string coord(double value);

// A short axis label: 0, 0.25, 40, 1.5k, 200k, 1.2M, 3G.
std::string short_number(double value);

// "Nice" linear ticks (steps of 1, 2 or 5 times a power of ten) covering [lo, hi]
// with about `target` intervals; the first tick <= lo and the last >= hi.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

// Log-scale ticks inside [lo, hi] (lo > 0): 1-2-5 per decade when the range spans
// fewer than four decades, else powers of ten only. Always at least two ticks: the
// range ends are added when fewer than two nice values fall inside.
std::vector<double> log_ticks(double lo, double hi);

// Approximate rendered width of text in the chart's sans-serif font.
double text_width(std::string_view text, double font_size);

// Okabe-Ito colour-blind-safe palette, indexed modulo its size.
const std::string& palette(std::size_t index);
// Fixed colours for trace categories (compute, exchange, sync, host-io, link, ...);
// unknown categories get a palette colour chosen by a stable hash of the name.
std::string category_color(std::string_view category);

// Plot area inside the SVG: width x height, minus the margins.
struct Frame {
  double width = 640, height = 360;
  double left = 76, right = 24, top = 56, bottom = 64;
  double plot_width() const { return width - left - right; }
  double plot_height() const { return height - top - bottom; }
};

using TickFormat = std::function<std::string(double)>;

struct Bar {
  std::string label;
  double value = 0;
  std::string color;               // empty: palette(i)
  std::vector<std::string> notes;  // lines printed above the bar (value, speed-up)
};

struct BarChart {
  std::string title, y_label;
  std::vector<Bar> bars;
  TickFormat y_format;  // empty: short_number
  Frame frame;
};

// Pixel geometry of the bars, for tests and annotations.
struct BarGeometry {
  double x, y, width, height;
};
std::vector<BarGeometry> bar_geometry(const BarChart& chart);
// The y-axis maximum the chart uses (last nice tick above the data and the notes).
double bar_axis_max(const BarChart& chart);
std::string render(const BarChart& chart);

struct BarSeries {
  std::string name, color;
  std::vector<double> values;  // one per category; NaN: no bar
};

struct GroupMarker {  // a dashed level drawn across one group, e.g. a capacity
  double value = 0;
  std::string label;
};

struct GroupedBarChart {
  std::string title, y_label;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  std::vector<std::optional<GroupMarker>> markers;  // per category, may be empty
  TickFormat y_format;                              // empty: short_number
  TickFormat value_format;                          // labels above bars; empty: none
  double y_max = 0;                                 // > 0: axis goes at least this high
  Frame frame;
};
std::string render(const GroupedBarChart& chart);

struct LinePoint {
  double x = 0;
  std::optional<double> y;  // empty: a gap in the line (e.g. a failed point)
  // Simulated but not possible (does not fit in memory): a hollow, labelled marker at
  // its value, and a gap in the line.
  bool out_of_memory = false;
};

struct LineSeries {
  std::string name, color;
  std::vector<LinePoint> points;  // drawn in the given order
  std::string dash{};             // SVG stroke-dasharray ("7 4"); empty: solid
};

struct Tick {
  double value = 0;
  std::string label;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<LineSeries> series;
  bool log_x = false;
  std::vector<Tick> x_ticks;   // empty: nice_ticks / log_ticks of the x range
  std::vector<double> error_x; // x positions of failed points, marked on the axis
  std::vector<Tick> x_lines;   // dashed vertical lines across the plot, labelled at the top (a limit)
  TickFormat y_format;         // empty: short_number
  double y_max = 0;            // > 0: the y axis goes at least this high (panels sharing a scale)
  Frame frame;
};
std::string render(const LineChart& chart);
// Maps x to a pixel column as the chart does (for tests).
double line_x_pixel(const LineChart& chart, double x);

struct GanttEvent {
  std::size_t row = 0;
  double start = 0, end = 0;  // seconds from the start of the chart
  std::string category, label;
};

struct GanttChart {
  std::string title;
  std::vector<std::string> rows;
  std::vector<GanttEvent> events;
  double width = 1200, row_height = 22;
  std::size_t max_rects = 3000;  // rectangles drawn at most
  // The label of events[i] when its own is empty, asked only for events drawn alone, so
  // a long trace need not hold a label per event.
  std::function<std::string(std::size_t)> label_of;
};

struct GanttRect {
  std::size_t row;
  double x0, x1;  // pixels
  std::string category;
  std::size_t events;  // trace events merged into this rectangle
  std::string label;   // the event's label when events == 1
  double coverage = 1; // share of the rectangle that events cover (< 1 only when bucketed)
};

// The rectangles the chart draws: per row, adjacent events of one category are
// merged while either side is narrower than a pixel; if that still leaves more than
// max_rects, each row is cut into equal pixel buckets (1, 2, 4, ... px, the finest that
// fits) showing the category that covers most of the bucket, with `coverage` the busy
// share of the bucket rounded to eighths (at least one); runs of equal buckets are merged.
std::vector<GanttRect> gantt_rects(const GanttChart& chart);

// Stacked bars: one bar per label, each the sum of its parts (e.g. the shares of a
// step's time), parts stacked bottom-up in the order given.
struct StackPart {
  std::string name, color;
  std::vector<double> values;  // one per bar; NaN or <= 0: not drawn
};

struct StackedBarChart {
  std::string title, y_label;
  std::vector<std::string> bars;
  std::vector<StackPart> parts;
  TickFormat y_format;      // empty: short_number
  TickFormat value_format;  // a part's value in its tooltip and, when tall enough, inside it
  Frame frame;
};
std::string render(const StackedBarChart& chart);

// The broken lines of a chart title of the given SVG width (for tests).
std::vector<std::string> title_lines(const std::string& title, double width);
std::string render(const GanttChart& chart);

} // namespace ipusim::chart
