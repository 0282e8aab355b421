# Tests that cannot run under a sanitizer: ds_sanitizer_skip(SANITIZER REGEX REASON).
# A matching test is disabled in a build whose DS_SANITIZE includes SANITIZER, with
# the label sanitizer-skip; ctest lists it as "Not Run (Disabled)" and prints the reason.

# AddressSanitizer intercepts mlock()/munlock() and makes them no-ops (locking would
# pin its shadow memory too), so on the kernel-5.10 path the odirect/shm pages we
# lock before registering are never locked, and the AscendCL double rightly refuses
# to register them (it reads Locked: in /proc/self/smaps, as the driver would see it).
ds_sanitizer_skip(address "^ascend\\.AscendKernel510\\.OdirectAndShmCasesRunWithTheirPagesLockedFirst$"
  "ASan makes mlock() a no-op: the pages the kernel-5.10 path locks stay unlocked and the double refuses them")
ds_sanitizer_skip(address "^memlock\\.Memlock\\.AscendOnKernel510LocksItsOwnMappingsAndThatIsCharged$"
  "ASan makes mlock() a no-op: the pages the kernel-5.10 path locks stay unlocked and the double refuses them")
