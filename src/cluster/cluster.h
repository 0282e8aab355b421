// The one place dev-sandbox talks across processes of a parallel job
// (docs/cluster.md): which rank this process is, on which node, a barrier
// that carries an "any rank failed?" vote, and the gather of every rank's
// serialized results to rank 0. Started alone (no launcher in the environment)
// the process is the single rank of a one-rank cluster and MPI is never
// initialised; started by mpirun/srun (and built with DS_WITH_MPI) it is one
// rank of MPI_COMM_WORLD. Cases never call this: the timed loop aligns its
// iterations through it (LoopShape::cluster) and src/cluster/across_ranks runs
// a command on every rank and brings the results together.
//
// The failure rule that keeps every rank from hanging: every rank calls agree()
// at the same points; a rank that failed votes false at its next agree(); once
// an agree() came out false (on every rank at once: it is one collective),
// agree() returns false at once without communicating and every rank goes
// straight to its one gather(). Every blocking call has a timeout and returns on
// Ctrl-C/SIGTERM (Interrupted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace ds {

// Another rank failed: this one stopped (a consequence, not the cause).
class RankStopped : public Stopped {
 public:
  explicit RankStopped(const std::string& what) : Stopped(what) {}
};

// No answer from the other ranks within the timeout: the job is no longer in
// step, so the process ends with MPI_Abort after its own cleanup.
class ClusterTimeout : public RunError {
 public:
  explicit ClusterTimeout(const std::string& what) : RunError(what) {}
};

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The node this rank runs on: DS_NODE_NAME when set (tests give ranks on one
  // machine different "nodes"), else the host name.
  virtual const std::string& node() const = 0;
  // Every rank calls it at the same point: true when every rank voted ok.
  // `what` names the point in a timeout's message.
  virtual bool agree(bool ok, int64_t timeout_ns, const std::string& what) = 0;
  // Every rank calls it once, at the end: rank 0 gets every rank's bytes
  // (index: rank), the others an empty vector.
  virtual std::vector<std::string> gather(const std::string& bytes, int64_t timeout_ns) = 0;
  // Every rank calls it at the same point, after an agree() that came out true:
  // rank 0's `value` on every rank (e.g. rank 0's pid, naming files it made).
  virtual int64_t from_rank0(int64_t value, int64_t timeout_ns, const std::string& what) = 0;
  // An agree() came out false (the failure rule above).
  virtual bool failed() const = 0;
  // A blocking call timed out: the job cannot finish in step (main() aborts it).
  virtual bool broken() const = 0;
  bool multi() const { return size() > 1; }
};

// A barrier across ranks: agree(true); RankStopped when another rank failed.
void cluster_barrier(Cluster& c, int64_t timeout_ns, const std::string& what);

// The process's cluster (one rank until cluster_start() found a launcher).
Cluster& cluster();

// main(): joins the job when a launcher started this process (MPI_Init), else
// nothing; its destructor leaves it (MPI_Finalize, or MPI_Abort when the job is
// broken or `exit_code` says the run failed after a timeout). RunError when the
// binary was built without MPI but a launcher started it with more than one rank.
class ClusterSession {
 public:
  ClusterSession(int* argc, char*** argv);
  ~ClusterSession();
  ClusterSession(const ClusterSession&) = delete;
  ClusterSession& operator=(const ClusterSession&) = delete;
  // The exit code main() returns; after a signal the job is not finalised (the
  // other ranks may be gone).
  void set_exit(int code) { exit_code_ = code; }

 private:
  int exit_code_ = 0;
};

// Whether a launcher (mpirun, srun with PMI/PMIx) started this process, from its
// environment, and the number of ranks it says (1 when unknown or none).
bool launched_by_mpi();
int launcher_world_size();

// The MPI library this binary was built with (MPI_Get_library_version's first
// line), or "" when built without MPI.
std::string mpi_library_version();

// doctor's line: whether MPI is built in (and its library), and whether a
// launcher started this process (then this rank, of how many, on which node).
std::string cluster_doctor_line();

// The node name of this process: DS_NODE_NAME, else gethostname().
std::string node_name();

// How long a rank waits for the others at the end (gather, final vote): the
// slowest rank may still be validating; DS_CLUSTER_TIMEOUT (seconds) overrides.
int64_t cluster_final_timeout_ns();

namespace detail {
// For the implementations: installs the process's cluster.
void set_cluster(std::unique_ptr<Cluster> c);
}  // namespace detail

}  // namespace ds
