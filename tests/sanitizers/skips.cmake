# Tests that cannot run under a sanitizer: ds_sanitizer_skip(SANITIZER REGEX REASON).
# A matching test is disabled in a build whose DS_SANITIZE includes SANITIZER, with
# the label sanitizer-skip; ctest lists it as "Not Run (Disabled)" and prints the reason.
