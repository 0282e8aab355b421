// ClusterSession without MPI (DS_WITH_MPI=OFF): always one rank.
#include "cluster/cluster.h"

namespace ds {

ClusterSession::ClusterSession(int*, char***) {
  if (launched_by_mpi() && launcher_world_size() > 1)
    throw RunError("started by an MPI launcher as one of " + std::to_string(launcher_world_size()) +
                   " ranks, but this dev-sandbox was built without MPI (build with -DDS_WITH_MPI=ON, or "
                   "`ucm-toolkit build dev-sandbox --with-mpi`)");
}

ClusterSession::~ClusterSession() = default;

std::string mpi_library_version() { return ""; }

}  // namespace ds
