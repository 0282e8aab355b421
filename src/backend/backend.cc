#include "backend/backend.h"

#include "core/error.h"
#include "core/units.h"

namespace ds {

bool Device::query(Event&, Stream& stream) {
  synchronize(stream);
  return true;
}

const char* to_string(CopyDir dir) {
  switch (dir) {
    case CopyDir::kH2D: return "H2D";
    case CopyDir::kD2H: return "D2H";
    case CopyDir::kD2D: return "D2D";
    case CopyDir::kH2H: return "H2H";
  }
  return "?";
}

std::string device_line(const DeviceInfo& d) {
  std::string line = d.kind + " " + std::to_string(d.index) + ": " + d.name;
  if (!d.pci_bus_id.empty())
    line += ", PCI " + d.pci_bus_id + ", NUMA node " +
            (d.numa_node == DeviceInfo::kNumaUnknown ? std::string("unknown")
             : d.numa_node < 0                       ? std::string("none")
                                                     : std::to_string(d.numa_node));
  if (d.total_bytes > 0)
    line += ", " + (d.memory_name.empty() ? std::string() : d.memory_name + " ") + format_bytes(d.free_bytes) +
            " free of " + format_bytes(d.total_bytes);
  return line;
}

void Device::kernel_copy(const CopyDesc&, Stream&) {
  throw RunError("kernel copies are not available on this backend");
}

void Device::kernel_gather(const CopyDesc*, size_t, Stream&) {
  throw RunError("gather kernels are not available on this backend");
}

std::unique_ptr<StreamGate> Device::create_gate() {
  throw RunError("this backend cannot hold a stream at its start (--stream-start-gate)");
}

std::unique_ptr<Event> Device::create_polling_event() { return create_event(); }

void Device::copy_async_each(const CopyDesc* descs, size_t n, CopyDir dir, Stream& stream) {
  for (size_t i = 0; i < n; ++i) copy_async(descs[i], dir, stream);
}

bool Device::enable_peer_access(int, std::string*) { return true; }
void Device::prepare_batch(const CopyDesc*, size_t, CopyDir) {}
void Device::prepare_direct(const CopyDesc*, size_t) {}
void Device::prepare_kernel_copy() {}
void Device::prepare_kernel_gather(const CopyDesc*, size_t) {
  throw RunError("gather kernels are not available on this backend");
}

}  // namespace ds
