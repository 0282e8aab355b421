# The libFuzzer targets: tests/fuzz/<name>.cc each, with a corpus in
# tests/fuzz/corpus/<name>/ (ucm-toolkit reads this list for `fuzz` and --help).
set(DS_FUZZ_TARGETS units sweep cli_copy cli_quick cli_trans cli_aio cli_load cli_offload writers model_config job_file)
