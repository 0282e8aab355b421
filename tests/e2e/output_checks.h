// Checks on what the output writers produce, shared by the unit and end-to-end
// output tests: a small XML well-formedness parser (for the SVG plot) and a CSV
// splitter (RFC 4180 quoting).
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace dstest {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;  // entity references left as written
  std::string text;                          // character data directly inside
};

// Parses `doc` as XML 1.0 without DTDs: one root element, tags nested and
// closed, attributes quoted and unique, entity references well-formed. Returns
// "" when it is well-formed (elements in document order in `out`), else what is
// wrong and where.
inline std::string parse_xml(const std::string& doc, std::vector<XmlElement>* out) {
  size_t i = 0;
  std::vector<size_t> open;  // indexes into *out
  int roots = 0;
  auto at = [&](const std::string& what) { return what + " at offset " + std::to_string(i); };
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == ':';
  };
  auto check_refs = [&](const std::string& s) -> std::string {
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] == '<') return "'<' in character data or attribute";
      if (s[k] != '&') continue;
      const size_t semi = s.find(';', k);
      if (semi == std::string::npos) return "unterminated entity reference";
      const std::string ref = s.substr(k + 1, semi - k - 1);
      if (ref != "amp" && ref != "lt" && ref != "gt" && ref != "quot" && ref != "apos" &&
          !(ref.size() > 1 && ref[0] == '#'))
        return "unknown entity &" + ref + ";";
      k = semi;
    }
    return "";
  };
  auto skip_ws = [&] {
    while (i < doc.size() && std::isspace(static_cast<unsigned char>(doc[i]))) ++i;
  };
  while (i < doc.size()) {
    if (doc[i] != '<') {
      const size_t next = doc.find('<', i);
      const std::string text = doc.substr(i, next == std::string::npos ? std::string::npos : next - i);
      const std::string err = check_refs(text);
      if (!err.empty()) return at(err);
      if (open.empty()) {
        for (char c : text)
          if (!std::isspace(static_cast<unsigned char>(c))) return at("text outside the root");
      } else {
        (*out)[open.back()].text += text;
      }
      if (next == std::string::npos) break;
      i = next;
      continue;
    }
    if (doc.compare(i, 4, "<!--") == 0) {
      const size_t end = doc.find("-->", i + 4);
      if (end == std::string::npos) return at("unterminated comment");
      i = end + 3;
      continue;
    }
    if (doc.compare(i, 2, "<?") == 0) {
      const size_t end = doc.find("?>", i + 2);
      if (end == std::string::npos) return at("unterminated processing instruction");
      i = end + 2;
      continue;
    }
    if (doc.compare(i, 2, "</") == 0) {
      i += 2;
      const size_t start = i;
      while (i < doc.size() && name_char(doc[i])) ++i;
      const std::string name = doc.substr(start, i - start);
      skip_ws();
      if (i >= doc.size() || doc[i] != '>') return at("bad end tag");
      ++i;
      if (open.empty() || (*out)[open.back()].name != name) return at("mismatched </" + name + ">");
      open.pop_back();
      continue;
    }
    ++i;  // '<'
    XmlElement e;
    const size_t start = i;
    while (i < doc.size() && name_char(doc[i])) ++i;
    e.name = doc.substr(start, i - start);
    if (e.name.empty()) return at("empty element name");
    bool self_closing = false;
    for (;;) {
      const size_t before = i;
      skip_ws();
      if (i >= doc.size()) return at("unterminated tag <" + e.name);
      if (doc[i] == '>') {
        ++i;
        break;
      }
      if (doc.compare(i, 2, "/>") == 0) {
        i += 2;
        self_closing = true;
        break;
      }
      if (i == before) return at("attributes need white space between them");
      const size_t astart = i;
      while (i < doc.size() && name_char(doc[i])) ++i;
      const std::string attr = doc.substr(astart, i - astart);
      if (attr.empty()) return at("bad attribute in <" + e.name);
      skip_ws();
      if (i >= doc.size() || doc[i] != '=') return at("attribute " + attr + " without value");
      ++i;
      skip_ws();
      if (i >= doc.size() || (doc[i] != '"' && doc[i] != '\'')) return at("unquoted attribute " + attr);
      const char q = doc[i++];
      const size_t end = doc.find(q, i);
      if (end == std::string::npos) return at("unterminated attribute " + attr);
      const std::string value = doc.substr(i, end - i);
      const std::string err = check_refs(value);
      if (!err.empty()) return at(err);
      if (!e.attrs.emplace(attr, value).second) return at("duplicate attribute " + attr);
      i = end + 1;
    }
    if (open.empty()) {
      if (++roots > 1) return at("a second root element");
    }
    out->push_back(e);
    if (!self_closing) open.push_back(out->size() - 1);
  }
  if (!open.empty()) return "element <" + (*out)[open.back()].name + "> is never closed";
  if (roots != 1) return "no root element";
  return "";
}

// One CSV record per line (our writer quotes no line breaks in practice, but a
// quoted field may hold one: records are split on unquoted LF only).
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text, std::string* error) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"') {
      if (!field.empty() || was_quoted) {
        *error = "quote inside an unquoted field at offset " + std::to_string(i);
        return rows;
      }
      quoted = was_quoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      was_quoted = false;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      was_quoted = false;
    } else {
      if (was_quoted) {
        *error = "text after a closing quote at offset " + std::to_string(i);
        return rows;
      }
      field += c;
    }
  }
  if (quoted) *error = "unterminated quoted field";
  if (!field.empty() || !row.empty()) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace dstest
