// What a copy case does to its buffers, shared by the one-direction cases and the
// duplex ones (cases/case_runner, cases/duplex_runner): the address a copy uses,
// the data pattern in, a cleared destination, and the check of what arrived.
#pragma once

#include <string>

#include "backend/backend.h"
#include "copy_methods/initiator.h"
#include "layout/layout.h"
#include "memory/buffer.h"
#include "memory/host_memory.h"

namespace ds {

// Address a copy of `buf` uses: device memory by its device address; host memory
// by its CPU address, except on the direct path, which reads the mapped address.
char* copy_address(const Buffer& buf, CopyMethod method);
// Where `buf`'s fragments lie: the placement's device side for device memory, its
// host side for every host kind.
const Layout& layout_of(const CopyPlacement& at, const Buffer& buf);
// Bytes a buffer of `kind` needs for the placement: its side's region (a paged pool's).
uint64_t region_of(const CopyPlacement& at, BufKind kind);
// A copy per fragment of the placement, fragment i from its offset in `src`'s side
// to its offset in `dst`'s side (a block table's slot on a paged side), in direction
// `dir`, over `streams` streams submitted in `mode` (multi-stream CE).
CopyPlan plan_fragments(const Buffer& src, const Buffer& dst, const CopyPlacement& at, CopyDir dir, CopyMethod method,
                        int streams, SubmitMode mode);
// Every fragment of `layout` in `buf` gets the pattern of (owner, fragment index).
void fill_fragments(Device& dev, const Buffer& buf, int owner, const Layout& layout);
// Every fragment gets the bitwise inverse of that pattern (--validate each, before
// an iteration), so a byte not copied fails the check. Device memory through
// `staging` (one fragment of pageable memory).
void clear_fragments(Device& dev, const Buffer& buf, int owner, const Layout& layout, Memory* staging);
// RunError "validation failed: case <name> device <d><when> block <i> first differing
// offset <o>" at the first fragment that does not hold its pattern. `when`: "" after
// the run, " iteration 3" with --validate each; `staging`: one fragment of pageable
// memory for device memory, or null to allocate one here.
void check_fragments(Device& dev, const Buffer& buf, int owner, const Layout& layout, const std::string& case_name,
                     int device, const std::string& when = "", Memory* staging = nullptr);

}  // namespace ds
