# Tests that cannot run under a sanitizer: ds_sanitizer_skip(SANITIZER REGEX REASON).
# A matching test is disabled in a build whose DS_SANITIZE includes SANITIZER, with
# the label sanitizer-skip; ctest lists it as "Not Run (Disabled)" and prints the reason.

# The ASan and TSan runtimes intercept mlock()/munlock() and make them no-ops (locking
# would pin their shadow memory too), so on the kernel-5.10 path the odirect/shm pages
# we lock before registering are never locked, and the AscendCL double rightly refuses
# to register them (it reads Locked: in /proc/self/smaps, as the driver would see it).
foreach(san address thread)
  ds_sanitizer_skip(${san} "^ascend\\.AscendKernel510\\.OdirectAndShmCasesRunWithTheirPagesLockedFirst$"
    "the sanitizer runtime makes mlock() a no-op: the pages the kernel-5.10 path locks stay unlocked and the double refuses them")
  ds_sanitizer_skip(${san} "^memlock\\.Memlock\\.AscendOnKernel510LocksItsOwnMappingsAndThatIsCharged$"
    "the sanitizer runtime makes mlock() a no-op: the pages the kernel-5.10 path locks stay unlocked and the double refuses them")
endforeach()

# Under ASan the per-worker destination buffer of shm_to_all_host_memcpy (malloc'd,
# touched page by page at setup) reads to move_pages as not faulted in, which the
# placement check counts as misplaced; the shared region itself is proven placed.
# Not understood yet (ASan's allocator and the worker's memory policy); the normal
# build runs the test in full.
ds_sanitizer_skip(address "^NumaE2e\\.SharedRegionOnTheListedNodesProvenBeforeTiming$"
  "under ASan a worker's malloc'd destination reads as not faulted in to move_pages at setup (not understood yet)")

# Under ASan, ranks started by mpirun whose fork workers run the sim copy engine hang
# in warm-up (seen with 2 and 3 ranks, `copy -t host_to_device_ce_multi_stream -d 2`:
# "no progress ... copy submitted, waiting for completion"); the normal build and ASan
# without mpirun do not. Suspected: a fork while one of OpenMPI's threads holds a lock
# of the ASan runtime. Not diagnosed yet; the normal build runs every MPI test.
ds_sanitizer_skip(address "^mpi\\."
  "under ASan, fork workers of a rank started by mpirun can hang in warm-up (suspected: fork while an OpenMPI thread holds an ASan runtime lock, not diagnosed yet)")
