// A strict, small checker of the --report pages (tune, run): the page parses as
// well-formed HTML5 of the subset the writer uses, and what its tables hold.
//   - every element is closed in order (void elements and "/>" inside <svg> excepted);
//   - attributes are name="value" pairs; text and values hold no raw '<' and only the
//     character references the writer makes (&amp; &lt; &gt; &quot; &#39;, and &apos; &#N; of the SVGs);
//   - no <script>, no <link>, <iframe>, <img>, no src= or an http(s):// reference: a
//     self-contained page, nothing fetched, nothing run.
// The checker fails on what it does not know; tests/e2e/test_report_e2e.cc shows it does.
#pragma once

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace dstest {

struct HtmlCheck {
  std::vector<std::string> errors;
  std::vector<std::vector<std::string>> rows;  // every <tr>: its cells' text, references decoded
  int svgs = 0, tables = 0;  // svgs: outermost <svg> elements (a plot's panels are inside one)
};

inline std::string html_decode(const std::string& s, std::vector<std::string>& errors) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') errors.push_back("a raw '<' in text: " + s.substr(i, 40));
    if (s[i] != '&') {
      o += s[i];
      continue;
    }
    const size_t semi = s.find(';', i);
    const std::string ref = semi == std::string::npos ? s.substr(i, 12) : s.substr(i, semi - i + 1);
    if (ref == "&amp;") o += '&';
    else if (ref == "&lt;") o += '<';
    else if (ref == "&gt;") o += '>';
    else if (ref == "&quot;") o += '"';
    else if (ref == "&#39;") o += '\'';
    else if (ref == "&apos;") o += '\'';
    else if (ref.size() > 3 && ref[1] == '#' && std::isdigit(static_cast<unsigned char>(ref[2]))) o += '?';
    else errors.push_back("an unknown character reference: " + ref);
    i += ref.size() - 1;
  }
  return o;
}

// name="value" pairs of a tag's inside after its name; false when malformed.
inline bool html_attributes(const std::string& in, std::vector<std::pair<std::string, std::string>>& out,
                            std::vector<std::string>& errors) {
  size_t i = 0;
  while (i < in.size()) {
    while (i < in.size() && std::isspace(static_cast<unsigned char>(in[i]))) ++i;
    if (i >= in.size()) break;
    size_t n = i;
    while (n < in.size() && (std::isalnum(static_cast<unsigned char>(in[n])) || in[n] == '-' || in[n] == ':' || in[n] == '_'))
      ++n;
    if (n == i || n + 1 >= in.size() || in[n] != '=' || in[n + 1] != '"') return false;
    const size_t close = in.find('"', n + 2);
    if (close == std::string::npos) return false;
    out.push_back({in.substr(i, n - i), html_decode(in.substr(n + 2, close - n - 2), errors)});
    i = close + 1;
  }
  return true;
}

inline HtmlCheck check_html(const std::string& page) {
  static const std::set<std::string> kVoid = {"meta", "br", "hr", "col", "wbr"};
  static const std::set<std::string> kBanned = {"script", "link", "iframe", "img", "object", "embed", "base"};
  HtmlCheck c;
  std::vector<std::string> open;
  std::vector<std::string>* row = nullptr;
  std::string cell;
  bool in_cell = false;
  if (page.rfind("<!DOCTYPE html>", 0) != 0) c.errors.push_back("no <!DOCTYPE html> first");
  size_t i = page.find('>') + 1;
  while (i < page.size()) {
    const size_t lt = page.find('<', i);
    const std::string text = page.substr(i, (lt == std::string::npos ? page.size() : lt) - i);
    const std::string decoded = html_decode(text, c.errors);
    if (in_cell) cell += decoded;
    if (lt == std::string::npos) break;
    const size_t gt = page.find('>', lt);
    if (gt == std::string::npos) {
      c.errors.push_back("a tag never closed at " + std::to_string(lt));
      break;
    }
    std::string tag = page.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    const bool closing = !tag.empty() && tag[0] == '/';
    const bool self_closed = !tag.empty() && tag.back() == '/';
    if (closing) tag.erase(0, 1);
    if (self_closed) tag.pop_back();
    size_t n = 0;
    while (n < tag.size() && (std::isalnum(static_cast<unsigned char>(tag[n])) || tag[n] == '-')) ++n;
    const std::string name = tag.substr(0, n);
    if (name.empty()) {
      c.errors.push_back("not a tag: <" + tag + ">");
      continue;
    }
    if (kBanned.count(name)) c.errors.push_back("a <" + name + "> element (the page must need none)");
    std::vector<std::pair<std::string, std::string>> attrs;
    if (closing && n != tag.size()) c.errors.push_back("an end tag with attributes: </" + tag + ">");
    if (!closing && !html_attributes(tag.substr(n), attrs, c.errors)) c.errors.push_back("malformed attributes: <" + tag + ">");
    for (const auto& a : attrs) {
      if (a.first == "src" || a.second.find("http://") != std::string::npos && a.first != "xmlns" ||
          a.second.find("https://") != std::string::npos)
        c.errors.push_back("an outside reference: " + a.first + "=\"" + a.second + "\"");
    }
    if (closing) {
      if (open.empty() || open.back() != name) {
        c.errors.push_back("</" + name + "> closes " + (open.empty() ? std::string("nothing") : "<" + open.back() + ">"));
        continue;
      }
      open.pop_back();
      if ((name == "td" || name == "th") && row) {
        row->push_back(cell);
        in_cell = false;
      }
      if (name == "tr") row = nullptr;
      continue;
    }
    if (name == "svg" && std::find(open.begin(), open.end(), "svg") == open.end()) ++c.svgs;  // outermost
    if (name == "table") ++c.tables;
    if (self_closed) {
      const bool in_svg = std::find(open.begin(), open.end(), "svg") != open.end();
      if (!in_svg && !kVoid.count(name)) c.errors.push_back("<" + name + "/> outside svg");
      continue;
    }
    if (kVoid.count(name)) continue;
    open.push_back(name);
    if (name == "tr") {
      c.rows.emplace_back();
      row = &c.rows.back();
    }
    if (name == "td" || name == "th") {
      in_cell = true;
      cell.clear();
    }
  }
  if (!open.empty()) c.errors.push_back("<" + open.back() + "> never closed");
  return c;
}

// A text line with its runs of spaces as one: "4   ce  0.1" -> "4 ce 0.1".
inline std::string collapse_spaces(const std::string& line) {
  std::string o;
  for (char ch : line) {
    if (ch == ' ' && (o.empty() || o.back() == ' ')) continue;
    o += ch;
  }
  while (!o.empty() && o.back() == ' ') o.pop_back();
  return o;
}

inline std::string joined(const std::vector<std::string>& cells) {
  std::string o;
  for (const std::string& s : cells) o += (o.empty() ? "" : " ") + s;
  return o;
}

}  // namespace dstest
