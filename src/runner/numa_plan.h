// The NUMA plan of a run, made once in this process before any worker exists, from
// what the selected backend's probe found and the options: with --numa auto (the
// default) every worker runs on its device's node and its host buffers are bound
// there; --numa off places nothing; --numa-map overrides the discovered map.
#pragma once

#include "backends/select.h"
#include "core/notes.h"
#include "topology/placement.h"

namespace ds {

// The NUMA plan for a run on the selected backend: each device's node as its
// probe found it (sim: card i on node i mod nodes), --numa-map over that.
// UsageError for a node or device that is not there. The first call in a process
// says once (to `notes`) when the machine has one node (only when a NUMA option was
// typed: a default run's output stays as it was) and, on a machine with several,
// which devices have no known node (they run unplaced). With --numa auto it also
// says once what the environment refuses: the placement calls (a container's
// seccomp profile: the run goes on unbound, JSON numa says so) and, for the
// devices in `used` (empty: all), node CPUs outside this process's CPU set.
// RunError when an explicit --numa-map / --shm-numa-nodes needs a refused call.
NumaPlan numa_plan_for(const NumaRequest& request, const SelectedBackend& selected, const std::vector<int>& used,
                       Notes& notes);
// Devices 0 .. n-1.
std::vector<int> first_devices(int n);

}  // namespace ds
