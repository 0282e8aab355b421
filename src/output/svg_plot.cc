#include "output/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/error.h"
#include "output/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ds {

namespace {

struct Series {
  std::string name;   // the legend's label
  int devices = 1;    // the most of its results'
  size_t colour = 0;  // its colour key's: a case's BW and WallBW lines share it
  bool wall = false;  // dashed (WallBW)
  std::vector<std::pair<double, double>> points;  // log2(block bytes), GiB/s
};

// Okabe-Ito (colour-blind safe; its yellow darkened to read on white), then
// repeated with other marker shapes.
const char* const kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                "#E69F00", "#56B4E9", "#000000", "#8C6D1F"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string fmt(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A 1/2/5 x 10^k step giving about `ticks` intervals up to `top`.
double nice_step(double top, int ticks) {
  const double raw = top / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

// One marker shape per palette round, so lines stay apart in greyscale too.
std::string marker(int index, double x, double y, const std::string& colour) {
  const int shape = (index / 8) % 3;
  if (shape == 1)
    return "<rect x=\"" + fmt(x - 3.5) + "\" y=\"" + fmt(y - 3.5) +
           "\" width=\"7\" height=\"7\" fill=\"" + colour + "\"/>";
  if (shape == 2)
    return "<path d=\"M" + fmt(x) + "," + fmt(y - 4.5) + " L" + fmt(x + 4.5) + "," + fmt(y + 3.5) +
           " L" + fmt(x - 4.5) + "," + fmt(y + 3.5) + " Z\" fill=\"" + colour + "\"/>";
  return "<circle cx=\"" + fmt(x) + "\" cy=\"" + fmt(y) + "\" r=\"4\" fill=\"" + colour +
         "\" stroke=\"#ffffff\" stroke-width=\"1\"/>";
}

}  // namespace

PlotMetric parse_plot_metric(const std::string& text) {
  if (text == "copy") return PlotMetric::kCopy;
  if (text == "wall") return PlotMetric::kWall;
  if (text == "both") return PlotMetric::kBoth;
  throw UsageError("option --plot-metric expects copy, wall or both, not '" + text + "'");
}

namespace {

// What is drawn: one series per case and metric, and the ranges they span.
struct PlotData {
  std::vector<Series> series;
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  int devices = 1, iterations = 0;
};

PlotData collect_series(const std::vector<CaseResult>& results, const PlotFigures& figures) {
  PlotData d;
  std::map<std::string, size_t> index;
  std::map<std::string, size_t> colour_of;
  for (const auto& r : results) {
    const double x = std::log2(static_cast<double>(std::max<uint64_t>(1, r.block_bytes)));
    for (const PlotFigure& f : figures(r)) {
      const size_t colour = colour_of.emplace(f.colour_key, colour_of.size()).first->second;
      auto it = index.find(f.line);
      if (it == index.end()) {
        it = index.emplace(f.line, d.series.size()).first;
        d.series.push_back({f.line, r.devices, colour, f.dashed, {}});
      }
      Series& s = d.series[it->second];
      s.points.push_back({x, f.gib_s});
      s.devices = std::max(s.devices, r.devices);
      d.ymax = std::max(d.ymax, f.gib_s);
    }
    d.xmin = std::min(d.xmin, x);
    d.xmax = std::max(d.xmax, x);
    d.devices = std::max(d.devices, r.devices);
    d.iterations = std::max(d.iterations, r.iterations);
  }
  for (auto& s : d.series) std::sort(s.points.begin(), s.points.end());
  if (results.empty()) d.xmin = d.xmax = 12;
  return d;
}

// Layout: title on top, the plot, the x-axis label, then the legend below it so
// long case names never squeeze the plot.
struct Frame {
  double width = 960, left = 84, right = 36, top = 76, plot_h = 400;
  double plot_w = 0, bottom_axis = 0, legend_top = 0, legend_row = 24, height = 0;
  double xlo = 0, xhi = 0, ystep = 0, ytop = 0;
  int legend_cols = 1;
  double px(double x) const { return left + (x - xlo) / (xhi - xlo) * plot_w; }
  double py(double y) const { return bottom_axis - y / ytop * plot_h; }
};

Frame frame_for(const PlotData& d) {
  Frame f;
  f.xlo = d.xmin == d.xmax ? d.xmin - 0.5 : d.xmin;
  f.xhi = d.xmin == d.xmax ? d.xmax + 0.5 : d.xmax;
  f.ystep = nice_step(d.ymax > 0 ? d.ymax * 1.05 : 1.0, 6);
  f.ytop = std::max(f.ystep, std::ceil(d.ymax * 1.05 / f.ystep) * f.ystep);
  f.plot_w = f.width - f.left - f.right;
  f.bottom_axis = f.top + f.plot_h;
  f.legend_top = f.bottom_axis + 76;
  // Two legend columns when every entry fits in half the width (about 7.5 px a
  // character at 13 px), else one.
  size_t longest = 0;
  for (const auto& s : d.series) longest = std::max(longest, s.name.size() + 20);
  f.legend_cols = longest * 7.5 + 40 < (f.width - f.left - f.right) / 2 ? 2 : 1;
  const int legend_rows = static_cast<int>((d.series.size() + f.legend_cols - 1) / f.legend_cols);
  f.height = f.legend_top + legend_rows * f.legend_row + 20;
  return f;
}

std::string count_text(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

void write_title(std::ostringstream& o, const Frame& f, const PlotData& d, const PlotText& text) {
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << f.width << "\" height=\""
    << fmt(f.height, 0) << "\" viewBox=\"0 0 " << f.width << " " << fmt(f.height, 0)
    << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  std::string where = text.backend.empty() ? "" : text.backend + " backend";
  if (!text.count_word.empty()) where += (where.empty() ? "" : ", ") + count_text(d.devices, text.count_word);
  const std::string title = text.title + (where.empty() ? "" : ": " + where);
  o << "<text class=\"title\" x=\"" << f.width / 2 << "\" y=\"30\" text-anchor=\"middle\" "
    << "font-size=\"18\" font-weight=\"bold\" fill=\"#222222\">" << esc(title) << "</text>\n";
  o << "<text x=\"" << f.width / 2 << "\" y=\"52\" text-anchor=\"middle\" fill=\"#555555\">"
    << esc("dev-sandbox " + std::string(DS_VERSION) + ": " + text.definition + " over " +
           std::to_string(d.iterations) + " " + text.iterations_word)
    << "</text>\n";
}

// Grid, ticks, axes and their labels.
void write_axes(std::ostringstream& o, const Frame& f, const std::string& x_label) {
  o << "<g class=\"y-axis\" fill=\"#333333\" text-anchor=\"end\">\n";
  const int ydecimals = f.ystep >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(f.ystep)));
  for (int i = 0; i * f.ystep <= f.ytop * (1 + 1e-9); ++i) {
    const double y = f.py(i * f.ystep);
    o << "<line x1=\"" << f.left << "\" y1=\"" << fmt(y) << "\" x2=\"" << f.left + f.plot_w << "\" y2=\"" << fmt(y)
      << "\" stroke=\"#e3e3e3\"/>"
      << "<text x=\"" << f.left - 8 << "\" y=\"" << fmt(y + 4) << "\">" << fmt(i * f.ystep, ydecimals)
      << "</text>\n";
  }
  o << "</g>\n";
  o << "<g class=\"x-axis\" fill=\"#333333\" text-anchor=\"middle\">\n";
  const int first = static_cast<int>(std::ceil(f.xlo - 1e-9)), last = static_cast<int>(std::floor(f.xhi + 1e-9));
  const int every = std::max(1, (last - first + 12) / 13);
  for (int e = first; e <= last; e += every) {
    const double x = f.px(e);
    o << "<line x1=\"" << fmt(x) << "\" y1=\"" << f.top << "\" x2=\"" << fmt(x) << "\" y2=\"" << f.bottom_axis
      << "\" stroke=\"#e3e3e3\"/>"
      << "<line x1=\"" << fmt(x) << "\" y1=\"" << f.bottom_axis << "\" x2=\"" << fmt(x) << "\" y2=\""
      << f.bottom_axis + 5 << "\" stroke=\"#333333\"/>"
      << "<text x=\"" << fmt(x) << "\" y=\"" << f.bottom_axis + 21 << "\">"
      << size_label(e >= 0 && e < 63 ? (1ULL << e) : 1) << "</text>\n";
  }
  o << "</g>\n";
  o << "<path d=\"M" << f.left << "," << f.top << " V" << f.bottom_axis << " H" << f.left + f.plot_w
    << "\" fill=\"none\" stroke=\"#333333\" stroke-width=\"1.2\"/>\n";
  o << "<text class=\"x-label\" x=\"" << f.left + f.plot_w / 2 << "\" y=\"" << f.bottom_axis + 48
    << "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#222222\">"
    << esc(x_label) << "</text>\n";
  o << "<text class=\"y-label\" transform=\"translate(26," << f.top + f.plot_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"14\" fill=\"#222222\">"
    << "Bandwidth (GiB/s)</text>\n";
}

// The marks: a dashed grey line at each one's size, its label at the top, staggered.
void write_marks(std::ostringstream& o, const Frame& f, const std::vector<PlotMark>& marks) {
  if (marks.empty()) return;
  o << "<g class=\"marks\" fill=\"#444444\" font-size=\"11\">\n";
  for (size_t i = 0; i < marks.size(); ++i) {
    const double x = f.px(std::log2(static_cast<double>(std::max<uint64_t>(1, marks[i].x_bytes))));
    if (x < f.left - 0.5 || x > f.left + f.plot_w + 0.5) continue;
    const double y = f.top + 12 + static_cast<double>(i % 3) * 13;
    o << "<line x1=\"" << fmt(x) << "\" y1=\"" << f.top << "\" x2=\"" << fmt(x) << "\" y2=\"" << f.bottom_axis
      << "\" stroke=\"#888888\" stroke-width=\"1.2\" stroke-dasharray=\"3 3\"/>"
      << "<text x=\"" << fmt(x + 4) << "\" y=\"" << fmt(y) << "\">" << esc(marks[i].label) << "</text>\n";
  }
  o << "</g>\n";
}

const std::string& series_label(const Series& s) { return s.name; }
const char kDash[] = " stroke-dasharray=\"7 4\"";

// One line per case and metric, markers on every measured size, a tooltip per marker.
void write_series(std::ostringstream& o, const Frame& f, const std::vector<Series>& series) {
  for (const Series& s : series) {
    const std::string colour = kColours[s.colour % 8];
    o << "<g class=\"series\">\n<title>" << esc(series_label(s)) << "</title>\n<polyline fill=\"none\" stroke=\""
      << colour << "\" stroke-width=\"2.2\" stroke-linejoin=\"round\"" << (s.wall ? kDash : "") << " points=\"";
    for (size_t k = 0; k < s.points.size(); ++k)
      o << (k ? " " : "") << fmt(f.px(s.points[k].first)) << "," << fmt(f.py(s.points[k].second));
    o << "\"/>\n";
    for (const auto& pt : s.points)
      o << "<g>" << marker(static_cast<int>(s.colour), f.px(pt.first), f.py(pt.second), colour) << "<title>"
        << esc(series_label(s) + " " + size_label(1ULL << static_cast<int>(std::lround(pt.first))) + ": " +
               fmt(pt.second, 3) + " GiB/s")
        << "</title></g>\n";
    o << "</g>\n";
  }
}

void write_legend(std::ostringstream& o, const Frame& f, const std::vector<Series>& series, const std::string& count_word) {
  o << "<g class=\"legend\" fill=\"#222222\">\n";
  const double col_w = (f.width - f.left - f.right) / f.legend_cols;
  for (size_t i = 0; i < series.size(); ++i) {
    const double x = f.left + static_cast<double>(i % f.legend_cols) * col_w;
    const double y = f.legend_top + static_cast<double>(i / f.legend_cols) * f.legend_row;
    const std::string colour = kColours[series[i].colour % 8];
    o << "<line x1=\"" << fmt(x) << "\" y1=\"" << fmt(y) << "\" x2=\"" << fmt(x + 28) << "\" y2=\"" << fmt(y)
      << "\" stroke=\"" << colour << "\" stroke-width=\"2.2\"" << (series[i].wall ? kDash : "") << "/>"
      << marker(static_cast<int>(series[i].colour), x + 14, y, colour) << "<text x=\"" << fmt(x + 36) << "\" y=\""
      << fmt(y + 4.5) << "\">" << esc(series_label(series[i]))
      << (count_word.empty() ? "" : " (" + count_text(series[i].devices, count_word) + ")") << "</text>\n";
  }
  o << "</g>\n";
}

}  // namespace

std::vector<PlotFigure> bandwidth_figures(const CaseResult& r, const std::string& key, PlotMetric metric) {
  std::vector<PlotFigure> out;
  if (metric != PlotMetric::kWall) out.push_back({key, key, false, r.bandwidth_gib_s()});
  if (metric != PlotMetric::kCopy) out.push_back({key + " WallBW", key, true, r.wall_bandwidth_gib_s()});
  return out;
}

std::string bandwidth_definition(PlotMetric metric, const std::string& stage, const std::string& bytes) {
  if (metric == PlotMetric::kCopy) return "BW = " + bytes + " / " + stage + " avg";
  if (metric == PlotMetric::kWall) return "WallBW = " + bytes + " / GroupWall avg";
  return "BW (solid) = bytes / " + stage + " avg, WallBW (dashed) = bytes / GroupWall avg";
}

std::string plot_svg(const std::vector<CaseResult>& results, const PlotText& text, const PlotFigures& figures) {
  const PlotData d = collect_series(results, figures);
  const Frame f = frame_for(d);
  std::ostringstream o;
  write_title(o, f, d, text);
  write_axes(o, f, text.x_label);
  write_marks(o, f, text.marks);
  write_series(o, f, d.series);
  write_legend(o, f, d.series, text.count_word);
  o << "</svg>\n";
  return o.str();
}

std::string bandwidth_plot_svg(const std::vector<CaseResult>& results, const std::string& backend,
                               PlotMetric metric) {
  PlotText text;
  text.title = "Bandwidth by block size";
  text.backend = backend;
  text.definition = bandwidth_definition(metric, "Copy", "block size x Count");
  return plot_svg(results, text, [metric](const CaseResult& r) { return bandwidth_figures(r, r.name, metric); });
}

void check_plot_path(const std::string& path) { check_writable(path, "--plot"); }

void write_plot_file(const std::string& path, const std::string& svg, Notes& notes) {
  AtomicFile f(path, "--plot");
  f.stream() << svg;
  f.commit();
  notes.tell("wrote the plot to " + path);
}

}  // namespace ds
