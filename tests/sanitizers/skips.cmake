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
