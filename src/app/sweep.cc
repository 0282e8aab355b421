#include "app/sweep.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "app/output_options.h"
#include "core/error.h"
#include "core/units.h"
#include "output/atomic_file.h"

namespace ds {

namespace {

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::vector<SweepStep> sweep_steps(const std::string& range, uint64_t blocks) {
  const std::string accepts = ": accepts FROM:TO, powers of two with FROM <= TO (e.g. 4K:64M)";
  const size_t colon = range.find(':');
  if (colon == std::string::npos || range.find(':', colon + 1) != std::string::npos)
    throw UsageError("option --sweep got '" + range + "'" + accepts);
  const uint64_t from = parse_size("--sweep", range.substr(0, colon));
  const uint64_t to = parse_size("--sweep", range.substr(colon + 1));
  if (!power_of_two(from) || !power_of_two(to) || from > to)
    throw UsageError("option --sweep got '" + range + "'" + accepts);
  const uint64_t budget = checked_mul(from, blocks, "--sweep FROM x -n");
  std::vector<SweepStep> steps;
  for (uint64_t s = from;; s *= 2) {
    steps.push_back({s, std::max<uint64_t>(1, std::min(blocks, budget / s))});
    if (s == to) break;
  }
  return steps;
}

void check_plot_path(const std::string& path) {
  struct stat st;
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) throw RunError("cannot write --plot " + path + ": it is a directory");
  errno = 0;
  {
    std::ofstream f(path, std::ios::out | std::ios::app);
    if (!f.is_open())
      throw RunError("cannot write --plot " + path + ": " +
                     (errno ? std::strerror(errno) : "open failed"));
  }
  if (!existed) ::unlink(path.c_str());
}

void write_plot_file(const std::string& path, const std::string& svg) {
  AtomicFile f(path, "--plot");
  f.stream() << svg;
  f.commit();
  stderr_notes().tell("wrote the plot to " + path);
}

}  // namespace ds
