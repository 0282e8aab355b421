#include "app/command.h"
#include "cluster/cluster.h"
#include "core/interrupt.h"

int main(int argc, char** argv) {
  ds::install_interrupt_handlers();
  // Under mpirun/srun: one rank of the job (MPI_Init); alone: nothing changes.
  std::unique_ptr<ds::ClusterSession> session;
  try {
    session = std::make_unique<ds::ClusterSession>(&argc, &argv);
  } catch (const std::exception& e) {
    ds::print_error(e.what());
    return 1;
  }
  const int code = ds::run_cli(argc, argv);
  session->set_exit(code);
  return code;
}
