// CSV output: one header line, one line per case with the JSON
// fields flattened (submit_us_min ... start_skew_us_p999). The last column, error, is
// empty for a measured case; a failed run ends with a line naming the case and
// the reason, its other cells empty, so the file still says what happened.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

// RFC 4180: quoted when it holds a comma, quote, CR or LF; quotes doubled.
std::string csv_field(const std::string& text);

const std::vector<std::string>& csv_columns();

class CsvWriter : public ResultWriter {
 public:
  explicit CsvWriter(std::ostream& out) : out_(out) {}
  void begin(const RunInfo&) override;
  void add(const CaseResult& result) override;
  void validation(const std::string&, bool) override {}  // a result already carries it
  void fail(const std::string& case_name, const std::string& error) override;
  void finish() override;

 private:
  void header();
  std::ostream& out_;
  bool header_done_ = false;
  bool failed_ = false;
};

}  // namespace ds
