#include "cluster/cluster.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace ds {

namespace {

// One process alone: every vote is its own, the gather its own bytes.
class SingleCluster : public Cluster {
 public:
  SingleCluster() : node_(node_name()) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& node() const override { return node_; }
  bool agree(bool ok, int64_t, const std::string&) override {
    if (!ok) failed_ = true;
    return !failed_;
  }
  std::vector<std::string> gather(const std::string& bytes, int64_t) override { return {bytes}; }
  int64_t from_rank0(int64_t value, int64_t, const std::string&) override { return value; }
  bool failed() const override { return failed_; }
  bool broken() const override { return false; }

 private:
  std::string node_;
  bool failed_ = false;
};

std::unique_ptr<Cluster>& current() {
  static std::unique_ptr<Cluster> c;
  return c;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end && *end == '\0' && n >= 0 && n < INT_MAX ? static_cast<int>(n) : -1;
}

}  // namespace

void cluster_barrier(Cluster& c, int64_t timeout_ns, const std::string& what) {
  if (!c.agree(true, timeout_ns, what)) throw RankStopped("stopped: another rank failed (at " + what + ")");
}

Cluster& cluster() {
  if (!current()) current() = std::make_unique<SingleCluster>();
  return *current();
}

void detail::set_cluster(std::unique_ptr<Cluster> c) { current() = std::move(c); }

// OpenMPI (mpirun: OMPI_COMM_WORLD_SIZE), PMIx (OpenMPI 5, srun --mpi=pmix:
// PMIX_RANK), PMI-1/2 (MPICH's hydra, srun --mpi=pmi2: PMI_RANK / PMI_SIZE).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (env_int(v) >= 0) return true;
  return false;
}

int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const int n = env_int(v);
    if (n > 0) return n;
  }
  return 1;
}

std::string node_name() {
  const char* forced = std::getenv("DS_NODE_NAME");
  if (forced && *forced) return forced;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown";
  return host;
}

int64_t cluster_final_timeout_ns() {
  const int s = env_int("DS_CLUSTER_TIMEOUT");
  return (s > 0 ? static_cast<int64_t>(s) : 600) * 1000000000LL;
}

std::string cluster_doctor_line() {
  const std::string lib = mpi_library_version();
  std::string line = "across nodes (MPI): ";
  line += DS_HAVE_MPI ? "built in (" + (lib.empty() ? std::string("library version unknown") : lib) + ")"
                      : std::string("not built in (DS_WITH_MPI=OFF, or no MPI found at build time)");
  if (!launched_by_mpi()) return line + "; not under a launcher (one process)";
  const Cluster& c = cluster();
  return line + "; under a launcher: rank " + std::to_string(c.rank()) + " of " + std::to_string(c.size()) +
         " on node " + c.node();
}

}  // namespace ds
