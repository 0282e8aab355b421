// Several writers fed the same results, in order (--format text,json: the text as
// results arrive, then the JSON document at the end, as fio's
// --output-format=normal,json does).
#pragma once

#include <memory>
#include <vector>

#include "output/result.h"

namespace ds {

class TeeWriter : public ResultWriter {
 public:
  explicit TeeWriter(std::vector<std::unique_ptr<ResultWriter>> writers) : writers_(std::move(writers)) {}
  void begin(const RunInfo& info) override {
    for (auto& w : writers_) w->begin(info);
  }
  void add(const CaseResult& result) override {
    for (auto& w : writers_) w->add(result);
  }
  void validation(const std::string& case_name, bool pass) override {
    for (auto& w : writers_) w->validation(case_name, pass);
  }
  void fail(const std::string& case_name, const std::string& error) override {
    for (auto& w : writers_) w->fail(case_name, error);
  }
  void nodes(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels) override {
    for (auto& w : writers_) w->nodes(nodes, labels);
  }
  void finish() override {
    for (auto& w : writers_) w->finish();
  }

 private:
  std::vector<std::unique_ptr<ResultWriter>> writers_;
};

}  // namespace ds
