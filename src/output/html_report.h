// --report FILE.html (tune and run): one self-contained page a person opens, with no
// network and no script: inline CSS, the tables, the inline SVG plots, the machine
// facts and a short paragraph per section saying what the figures mean. The
// commands fill the plain structs below; every text in them is escaped here (job
// names, paths, model names come from input), the SVGs are inserted as the plot
// writers made them (they escape their own text), without their XML prolog.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/notes.h"

namespace ds {

// A table: the same cells the text output prints (one header, one row per line).
struct ReportTable {
  std::string caption;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

struct ReportSection {
  std::string heading;
  std::string prose;               // what the figures of this section mean
  std::vector<ReportTable> tables;
  std::vector<std::string> lines;  // the text output's lines (crossovers, use, notes), a list
  std::vector<std::string> svgs;   // whole SVG documents (output/svg_plot), drawn inline
};

struct Report {
  std::string title;               // the page's title and first heading
  std::string intro;               // a paragraph under it: what ran, how long
  std::vector<std::pair<std::string, std::string>> facts;  // the machine: name, value
  std::vector<ReportSection> sections;
};

// `text` with &, <, >, " and ' as character references.
std::string html_escape(const std::string& text);

// The page, UTF-8, HTML5.
std::string report_html(const Report& report);

// RunError naming --report and the path when it cannot be created there, checked
// before anything runs; leaves nothing behind.
void check_report_path(const std::string& path);

// Writes the page to `path` whole (AtomicFile, option --report) and says so:
// "wrote the report to PATH"; RunError naming the path when that fails.
void write_report_file(const std::string& path, const Report& report, Notes& notes);

}  // namespace ds
