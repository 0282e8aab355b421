// The MPI implementation of Cluster (DS_WITH_MPI=ON), used only when a launcher
// started the process. Every collective is non-blocking and polled, so that a
// signal (mpirun's SIGTERM when another rank died) or the timeout ends the wait.
#include <mpi.h>
#include <time.h>

#include <cstdlib>

#include "cluster/cluster.h"
#include "core/clock.h"
#include "core/interrupt.h"

namespace ds {

namespace {

bool g_initialised = false;

std::string mpi_text(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(buf, static_cast<size_t>(len));
}

class MpiCluster : public Cluster {
 public:
  MpiCluster() : node_(node_name()) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& node() const override { return node_; }
  bool failed() const override { return failed_; }
  bool broken() const override { return broken_; }

  bool agree(bool ok, int64_t timeout_ns, const std::string& what) override {
    if (failed_) return false;
    int in = ok ? 1 : 0, out = 0;
    MPI_Request req;
    check(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req), "MPI_Iallreduce");
    wait(req, timeout_ns, what);
    if (out == 0) failed_ = true;
    return out != 0;
  }

  int64_t from_rank0(int64_t value, int64_t timeout_ns, const std::string& what) override {
    int64_t v = value;
    MPI_Request req;
    check(MPI_Ibcast(&v, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &req), "MPI_Ibcast");
    wait(req, timeout_ns, what);
    return v;
  }

  std::vector<std::string> gather(const std::string& bytes, int64_t timeout_ns) override {
    int len = static_cast<int>(bytes.size());
    std::vector<int> lens(rank_ == 0 ? static_cast<size_t>(size_) : 0);
    MPI_Request req;
    check(MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req), "MPI_Igather");
    wait(req, timeout_ns, "the gather of the results");
    std::vector<int> displs(lens.size());
    int total = 0;
    for (size_t r = 0; r < lens.size(); ++r) {
      displs[r] = total;
      total += lens[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    check(MPI_Igatherv(bytes.data(), len, MPI_CHAR, &all[0], lens.data(), displs.data(), MPI_CHAR, 0,
                       MPI_COMM_WORLD, &req),
          "MPI_Igatherv");
    wait(req, timeout_ns, "the gather of the results");
    std::vector<std::string> out;
    for (size_t r = 0; r < lens.size(); ++r)
      out.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(lens[r])));
    return out;
  }

 private:
  void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    broken_ = true;
    throw RunError(std::string(call) + ": " + mpi_text(rc));
  }

  // Polls `req`: the first millisecond spinning (a barrier's exit is what aligns
  // the ranks' starts), then in 50 us naps.
  void wait(MPI_Request& req, int64_t timeout_ns, const std::string& what) {
    const int64_t start = now_ns();
    for (;;) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      if (interrupted()) {
        broken_ = true;  // the request is left pending: no MPI_Finalize after this
        throw Interrupted();
      }
      const int64_t waited = now_ns() - start;
      if (timeout_ns > 0 && waited > timeout_ns) {
        broken_ = true;
        throw ClusterTimeout("rank " + std::to_string(rank_) + " (node " + node_ + "): no answer from every rank for " +
                             std::to_string(waited / 1000000000) + " s at " + what);
      }
      if (waited > 1000000) {
        const timespec nap{0, 50000};
        nanosleep(&nap, nullptr);
      }
    }
  }

  std::string node_;
  int rank_ = 0, size_ = 1;
  bool failed_ = false, broken_ = false;
};

}  // namespace

ClusterSession::ClusterSession(int* argc, char*** argv) {
  if (!launched_by_mpi()) return;  // alone: exactly as without MPI
  // Our fork workers are children of the rank and never call MPI; OpenMPI's
  // warning about fork() is not for them.
  setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
  int provided = 0;
  // Serialized: one thread at a time calls MPI (the timed loop's coordinator
  // while the workers run, the main thread otherwise).
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    throw RunError("MPI_Init_thread failed");
  g_initialised = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  detail::set_cluster(std::make_unique<MpiCluster>());
}

ClusterSession::~ClusterSession() {
  if (!g_initialised) return;
  const bool broken = cluster().broken();
  if (exit_code_ == 130) return;  // a signal: the others may be gone, so no collective finalize
  if (broken) MPI_Abort(MPI_COMM_WORLD, exit_code_ != 0 ? exit_code_ : 1);
  MPI_Finalize();
}

// MPI_Get_library_version may be called before MPI_Init (MPI-3).
std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "";
  std::string v(buf, static_cast<size_t>(len > 0 ? len : 0));
  const size_t end = v.find_first_of("\r\n");
  if (end != std::string::npos) v.resize(end);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\0')) v.pop_back();
  return v;
}

}  // namespace ds
