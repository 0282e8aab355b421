#include "output/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/error.h"

namespace ds {

namespace {

struct Series {
  std::string name;
  int devices = 1;
  size_t colour = 0;  // the case's: its BW and WallBW lines share it
  bool wall = false;  // WallBW (dashed) rather than BW
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

std::string bandwidth_plot_svg(const std::vector<CaseResult>& results, const std::string& backend,
                               PlotMetric metric) {
  std::vector<Series> series;
  std::map<std::pair<std::string, bool>, size_t> index;
  std::map<std::string, size_t> colour_of;
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  int devices = 1, iterations = 0;
  std::vector<bool> kinds;
  if (metric != PlotMetric::kWall) kinds.push_back(false);
  if (metric != PlotMetric::kCopy) kinds.push_back(true);
  for (const auto& r : results) {
    const size_t colour = colour_of.emplace(r.name, colour_of.size()).first->second;
    const double x = std::log2(static_cast<double>(std::max<uint64_t>(1, r.block_bytes)));
    for (bool wall : kinds) {
      auto it = index.find({r.name, wall});
      if (it == index.end()) {
        it = index.emplace(std::make_pair(r.name, wall), series.size()).first;
        series.push_back({r.name, r.devices, colour, wall, {}});
      }
      const double y = wall ? r.wall_bandwidth_gib_s() : r.bandwidth_gib_s();
      series[it->second].points.push_back({x, y});
      ymax = std::max(ymax, y);
    }
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    devices = std::max(devices, r.devices);
    iterations = std::max(iterations, r.iterations);
  }
  for (auto& s : series) std::sort(s.points.begin(), s.points.end());
  if (results.empty()) xmin = xmax = 12;
  const double xlo = xmin == xmax ? xmin - 0.5 : xmin, xhi = xmin == xmax ? xmax + 0.5 : xmax;
  const double ystep = nice_step(ymax > 0 ? ymax * 1.05 : 1.0, 6);
  const double ytop = std::max(ystep, std::ceil(ymax * 1.05 / ystep) * ystep);

  // Layout: title on top, the plot, the x-axis label, then the legend below it so
  // long case names never squeeze the plot.
  const double width = 960, left = 84, right = 36, top = 76, plot_h = 400;
  const double plot_w = width - left - right, bottom_axis = top + plot_h;
  const double legend_top = bottom_axis + 76, legend_row = 24;
  // Two legend columns when every entry fits in half the width (about 7.5 px a
  // character at 13 px), else one.
  size_t longest = 0;
  for (const auto& s : series) longest = std::max(longest, s.name.size() + 20);
  const int legend_cols = longest * 7.5 + 40 < (width - left - right) / 2 ? 2 : 1;
  const int legend_rows = static_cast<int>((series.size() + legend_cols - 1) / legend_cols);
  const double height = legend_top + legend_rows * legend_row + 20;
  auto px = [&](double x) { return left + (x - xlo) / (xhi - xlo) * plot_w; };
  auto py = [&](double y) { return bottom_axis - y / ytop * plot_h; };

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << width
    << "\" height=\"" << fmt(height, 0) << "\" viewBox=\"0 0 " << width << " " << fmt(height, 0)
    << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  const std::string title = "Bandwidth by block size: " + backend + " backend, " +
                            std::to_string(devices) + (devices == 1 ? " device" : " devices");
  o << "<text class=\"title\" x=\"" << width / 2 << "\" y=\"30\" text-anchor=\"middle\" "
    << "font-size=\"18\" font-weight=\"bold\" fill=\"#222222\">" << esc(title) << "</text>\n";
  o << "<text x=\"" << width / 2 << "\" y=\"52\" text-anchor=\"middle\" fill=\"#555555\">"
    << esc("dev-sandbox " + std::string(DS_VERSION) + ": " +
           (metric == PlotMetric::kCopy   ? std::string("BW = block size x Count / Copy avg")
            : metric == PlotMetric::kWall ? std::string("WallBW = block size x Count / GroupWall avg")
                                          : std::string("BW (solid) = bytes / Copy avg, WallBW (dashed) = bytes / "
                                                        "GroupWall avg")) +
           " over " + std::to_string(iterations) + " iterations")
    << "</text>\n";

  // Grid and y ticks.
  o << "<g class=\"y-axis\" fill=\"#333333\" text-anchor=\"end\">\n";
  const int ydecimals = ystep >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(ystep)));
  for (int i = 0; i * ystep <= ytop * (1 + 1e-9); ++i) {
    const double y = py(i * ystep);
    o << "<line x1=\"" << left << "\" y1=\"" << fmt(y) << "\" x2=\"" << left + plot_w << "\" y2=\""
      << fmt(y) << "\" stroke=\"#e3e3e3\"/>"
      << "<text x=\"" << left - 8 << "\" y=\"" << fmt(y + 4) << "\">" << fmt(i * ystep, ydecimals)
      << "</text>\n";
  }
  o << "</g>\n";
  o << "<g class=\"x-axis\" fill=\"#333333\" text-anchor=\"middle\">\n";
  const int first = static_cast<int>(std::ceil(xlo - 1e-9)), last = static_cast<int>(std::floor(xhi + 1e-9));
  const int every = std::max(1, (last - first + 12) / 13);
  for (int e = first; e <= last; e += every) {
    const double x = px(e);
    o << "<line x1=\"" << fmt(x) << "\" y1=\"" << top << "\" x2=\"" << fmt(x) << "\" y2=\""
      << bottom_axis << "\" stroke=\"#e3e3e3\"/>"
      << "<line x1=\"" << fmt(x) << "\" y1=\"" << bottom_axis << "\" x2=\"" << fmt(x) << "\" y2=\""
      << bottom_axis + 5 << "\" stroke=\"#333333\"/>"
      << "<text x=\"" << fmt(x) << "\" y=\"" << bottom_axis + 21 << "\">"
      << size_label(e >= 0 && e < 63 ? (1ULL << e) : 1) << "</text>\n";
  }
  o << "</g>\n";
  // Axes and their labels.
  o << "<path d=\"M" << left << "," << top << " V" << bottom_axis << " H" << left + plot_w
    << "\" fill=\"none\" stroke=\"#333333\" stroke-width=\"1.2\"/>\n";
  o << "<text class=\"x-label\" x=\"" << left + plot_w / 2 << "\" y=\"" << bottom_axis + 48
    << "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#222222\">"
    << "Block size (bytes, log2 scale)</text>\n";
  o << "<text class=\"y-label\" transform=\"translate(26," << top + plot_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"14\" fill=\"#222222\">"
    << "Bandwidth (GiB/s)</text>\n";

  // One line per case and metric, markers on every measured size, a tooltip per marker.
  auto label = [](const Series& s) { return s.name + (s.wall ? " WallBW" : ""); };
  const char* dash = " stroke-dasharray=\"7 4\"";
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const std::string colour = kColours[s.colour % 8];
    o << "<g class=\"series\">\n<title>" << esc(label(s)) << "</title>\n<polyline fill=\"none\" stroke=\""
      << colour << "\" stroke-width=\"2.2\" stroke-linejoin=\"round\"" << (s.wall ? dash : "") << " points=\"";
    for (size_t k = 0; k < s.points.size(); ++k)
      o << (k ? " " : "") << fmt(px(s.points[k].first)) << "," << fmt(py(s.points[k].second));
    o << "\"/>\n";
    for (const auto& pt : s.points)
      o << "<g>" << marker(static_cast<int>(s.colour), px(pt.first), py(pt.second), colour) << "<title>"
        << esc(label(s) + " " + size_label(1ULL << static_cast<int>(std::lround(pt.first))) + ": " +
               fmt(pt.second, 3) + " GiB/s")
        << "</title></g>\n";
    o << "</g>\n";
  }

  // Legend.
  o << "<g class=\"legend\" fill=\"#222222\">\n";
  const double col_w = (width - left - right) / legend_cols;
  for (size_t i = 0; i < series.size(); ++i) {
    const double x = left + static_cast<double>(i % legend_cols) * col_w;
    const double y = legend_top + static_cast<double>(i / legend_cols) * legend_row;
    const std::string colour = kColours[series[i].colour % 8];
    o << "<line x1=\"" << fmt(x) << "\" y1=\"" << fmt(y) << "\" x2=\"" << fmt(x + 28) << "\" y2=\""
      << fmt(y) << "\" stroke=\"" << colour << "\" stroke-width=\"2.2\"" << (series[i].wall ? dash : "") << "/>"
      << marker(static_cast<int>(series[i].colour), x + 14, y, colour) << "<text x=\"" << fmt(x + 36)
      << "\" y=\"" << fmt(y + 4.5) << "\">" << esc(label(series[i])) << " ("
      << series[i].devices << (series[i].devices == 1 ? " device" : " devices") << ")</text>\n";
  }
  o << "</g>\n</svg>\n";
  return o.str();
}

}  // namespace ds
