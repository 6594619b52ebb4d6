# Checks that the first ```cpp block of README.md is exactly SNIPPET
# (examples/quickstart.cpp), so the snippet users copy is one the tests run.
#   cmake -DREADME=README.md -DSNIPPET=examples/quickstart.cpp -P readme_snippet.cmake
cmake_minimum_required(VERSION 3.21)

file(READ "${README}" readme)
file(READ "${SNIPPET}" snippet)
set(fence_open "```cpp\n")
string(FIND "${readme}" "${fence_open}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${README} has no ```cpp block")
endif()
string(LENGTH "${fence_open}" skip)
math(EXPR start "${start} + ${skip}")
string(SUBSTRING "${readme}" ${start} -1 rest)
string(FIND "${rest}" "\n```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the first ```cpp block is not closed")
endif()
math(EXPR end "${end} + 1")  # keep the last line's newline
string(SUBSTRING "${rest}" 0 ${end} block)
if(NOT block STREQUAL snippet)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_snippet.cpp" "${block}")
  message(FATAL_ERROR "The first ```cpp block of ${README} differs from ${SNIPPET}; "
                      "the block is in ${CMAKE_CURRENT_BINARY_DIR}/readme_snippet.cpp (diff them)")
endif()
message(STATUS "README's first snippet is ${SNIPPET}")
