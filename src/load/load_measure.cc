#include "load/load_measure.h"

#include "staging/staged_measure.h"

namespace ds {

void measure_load(const LoadParams& p, const SelectedBackend& selected, ResultWriter& writer,
                  const std::function<void()>& begin, std::string& current, Notes& notes) {
  measure_staged(StagedDir::kLoad, p, selected, writer, begin, current, notes);
}

}  // namespace ds
