#include "core/suggest.h"

#include <algorithm>

namespace ds {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: three rows of the table.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string& typed, const std::vector<std::string>& candidates) {
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, typed.size() / 3));
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(typed, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= limit && best != typed ? best : "";
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates) {
  const std::string c = closest(typed, candidates);
  return c.empty() ? "" : " (did you mean " + c + "?)";
}

}  // namespace ds
