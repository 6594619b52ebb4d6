# Runs one libFuzzer target for SECONDS on a fresh copy of its seed corpus (the copy takes the
# new inputs the run finds; the source tree stays as it is). Fails on any crash, sanitizer
# report, leak, timeout or mismatch the target reports; the reproducer is left in WORK/.
#
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... -DSECONDS=30 -P run_fuzzer.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
file(GLOB seeds ${CORPUS}/*)
file(COPY ${seeds} DESTINATION ${WORK}/corpus)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=20 -rss_limit_mb=4096 -max_len=512
          -print_final_stats=1 -print_funcs=0 -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  file(GLOB found ${WORK}/artifacts/*)
  message(FATAL_ERROR "fuzzer ${FUZZER} failed (exit ${status}); reproducer: ${found}\n"
    "re-run it with: ${FUZZER} <reproducer>")
endif()
