#include "app/command.h"
#include "core/interrupt.h"

int main(int argc, char** argv) {
  ds::install_interrupt_handlers();
  return ds::run_cli(argc, argv);
}
