// A case is composed from parts: source buffer, destination buffer, copy method and
// topology. copy's named cases and trans's matrix are both lists of CaseSpecs
// run by the same runner (cases/case_runner).
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "copy_methods/initiator.h"
#include "memory/buffer.h"

namespace ds {

enum class Topology {
  kSingle,   // device 0, the calling thread
  kThreads,  // one thread per device in one process
  kFork,     // one child process per device
};

struct CaseSpec {
  std::string name;
  std::string brief;
  BufKind src;
  BufKind dst;
  bool shared_src;  // one source buffer for every device (index 0 in labels)
  CopyMethod method;
  Topology topology;
  // One destination region for every device, each device its own part of it (the
  // all_device_to_one_share_* cases: device w writes at w x its part's stride).
  bool shared_dst = false;
  // H2D and D2H on every card at once, each direction on its own streams, and each
  // alone in the same run (cases/duplex_runner): src/dst name the H2D direction.
  bool duplex = false;
};

// Bytes from one device's part of a shared destination to the next: its bytes
// rounded up to whole 4 KiB pages, so every part can be registered on its own.
uint64_t shared_part_stride(uint64_t part_bytes);

CopyDir direction(const CaseSpec& spec);
// Empty when `backend` can run the case, else why not.
std::string unsupported_reason(const CaseSpec& spec, const Backend& backend);
// Why --stream-start-gate on cannot hold this case's streams on `backend`, so it
// runs ungated (CPU memcpy has none; a runtime that may wait for a held stream
// inside a copy of pageable memory); empty: it is gated. A copy staged between
// devices without peer access is known only at setup (the workers say so).
std::string ungated_reason(const CaseSpec& spec, const Backend& backend);
std::string method_name(const CaseSpec& spec, const Backend& backend);
std::string from_label(const CaseSpec& spec, const Backend& backend);
std::string to_label(const CaseSpec& spec, const Backend& backend);

}  // namespace ds
