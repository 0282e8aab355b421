// The --report page (output/html_report.h).
#include "output/html_report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "output/atomic_file.h"

namespace ds {

namespace {

// Enough to read the tables and plots; nothing fetched, nothing run.
const char* kStyle =
    "body{font-family:sans-serif;margin:2em;max-width:80em;color:#222}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:0.5em 0 1em}"
    "th,td{border:1px solid #ccc;padding:0.2em 0.6em;text-align:right;font-family:monospace}"
    "th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}"
    "caption{text-align:left;font-weight:bold;padding:0.3em 0}"
    "p.what{color:#444;max-width:60em}ul.lines{font-family:monospace}"
    "figure{margin:1em 0}";

// An SVG document without its XML prolog (inline SVG in HTML has none).
std::string inline_svg(const std::string& svg) {
  const size_t start = svg.find("<svg");
  return start == std::string::npos ? std::string() : svg.substr(start);
}

void table_html(std::ostringstream& o, const ReportTable& t) {
  o << "<table>\n";
  if (!t.caption.empty()) o << "<caption>" << html_escape(t.caption) << "</caption>\n";
  o << "<thead><tr>";
  for (const std::string& h : t.header) o << "<th>" << html_escape(h) << "</th>";
  o << "</tr></thead>\n<tbody>\n";
  for (const std::vector<std::string>& row : t.rows) {
    o << "<tr>";
    for (const std::string& cell : row) o << "<td>" << html_escape(cell) << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody>\n</table>\n";
}

void section_html(std::ostringstream& o, const ReportSection& s) {
  o << "<section>\n<h2>" << html_escape(s.heading) << "</h2>\n";
  if (!s.prose.empty()) o << "<p class=\"what\">" << html_escape(s.prose) << "</p>\n";
  for (const ReportTable& t : s.tables) table_html(o, t);
  if (!s.lines.empty()) {
    o << "<ul class=\"lines\">\n";
    for (const std::string& l : s.lines) o << "<li>" << html_escape(l) << "</li>\n";
    o << "</ul>\n";
  }
  for (const std::string& svg : s.svgs) o << "<figure>\n" << inline_svg(svg) << "</figure>\n";
  o << "</section>\n";
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string o;
  o.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string report_html(const Report& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << html_escape(r.title)
    << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>" << html_escape(r.title) << "</h1>\n";
  if (!r.intro.empty()) o << "<p>" << html_escape(r.intro) << "</p>\n";
  if (!r.facts.empty()) {
    ReportSection machine;
    machine.heading = "The machine";
    machine.prose = "What doctor reports about the host and the backend this ran on: the figures below are this "
                    "machine's, not a general property of the methods.";
    ReportTable t;
    t.header = {"Fact", "Value"};
    for (const auto& f : r.facts) t.rows.push_back({f.first, f.second});
    machine.tables.push_back(std::move(t));
    section_html(o, machine);
  }
  for (const ReportSection& s : r.sections) section_html(o, s);
  o << "</body>\n</html>\n";
  return o.str();
}

void check_report_path(const std::string& path) { check_writable(path, "--report"); }

void write_report_file(const std::string& path, const Report& report, Notes& notes) {
  AtomicFile f(path, "--report");
  f.stream() << report_html(report);
  f.commit();
  notes.tell("wrote the report to " + path);
}

}  // namespace ds
