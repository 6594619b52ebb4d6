# Runs TOOL with ARGS (a ;-list) and checks its exit status (EXPECT_STATUS) and that its
# stdout and stderr together match EXPECT_REGEX. Used by the tool_* tests.
execute_process(COMMAND ${TOOL} ${ARGS}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${err}${out}")
message("${all}")
if(NOT status STREQUAL "${EXPECT_STATUS}")
  message(FATAL_ERROR "exit status ${status}, expected ${EXPECT_STATUS}")
endif()
string(REGEX REPLACE "\n" " " flat "${all}")
if(NOT flat MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "the output does not match: ${EXPECT_REGEX}")
endif()
