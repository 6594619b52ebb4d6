# The API reference: Doxygen over the public headers (include/tenex/, not src/), HTML in
# the build tree.
#
#   cmake --build build --target docs     # build/docs/html/index.html
#
# Not part of ALL. Any Doxygen warning (a \param naming no parameter, an unknown command,
# a broken reference) fails the target, and the test `api_docs` (label `check`) runs the
# same Doxygen so that the suite fails on one too. An undocumented entity is no warning:
# the reference lists every public entity, documented or not. Without doxygen (Debian:
# doxygen, which scripts/install-deps installs) there is no target and the test is skipped.
find_package(Doxygen QUIET COMPONENTS doxygen)

set(TENEX_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
if(NOT DOXYGEN_FOUND)
  message(STATUS "tenex: doxygen not found: no `docs` target, test api_docs skipped (Debian: apt-get install doxygen)")
  if(TENEX_BUILD_TESTS)
    add_test(NAME api_docs COMMAND ${CMAKE_COMMAND} -E echo "api_docs: skipped, doxygen was not found at configure time")
    set_tests_properties(api_docs PROPERTIES LABELS check SKIP_REGULAR_EXPRESSION "api_docs: skipped")
  endif()
  return()
endif()

set(DOXYGEN_PROJECT_NAME tenex)
set(DOXYGEN_PROJECT_NUMBER ${PROJECT_VERSION})
set(DOXYGEN_PROJECT_BRIEF "Tensor algebra in C++20: Einstein-notation expressions, optimized graphs, CPU, CUDA and ScaLAPACK backends")
set(DOXYGEN_OUTPUT_DIRECTORY ${TENEX_DOCS_DIR})
set(DOXYGEN_HTML_OUTPUT html)
set(DOXYGEN_GENERATE_LATEX NO)
set(DOXYGEN_QUIET YES)
# The front page: the map of the public headers.
set(DOXYGEN_USE_MDFILE_AS_MAINPAGE ${PROJECT_SOURCE_DIR}/include/tenex/README.md)
set(DOXYGEN_FILE_PATTERNS *.hpp *.md)
set(DOXYGEN_RECURSIVE YES)
# `#include <tenex/tensor/tensor.hpp>`, as users write it.
set(DOXYGEN_FULL_PATH_NAMES YES)
set(DOXYGEN_STRIP_FROM_PATH ${PROJECT_SOURCE_DIR}/include)
set(DOXYGEN_STRIP_FROM_INC_PATH ${PROJECT_SOURCE_DIR}/include)
# Every public entity, documented or not; tenex::detail is not the API.
set(DOXYGEN_EXTRACT_ALL YES)
set(DOXYGEN_EXCLUDE_SYMBOLS "tenex::detail" "detail")
set(DOXYGEN_JAVADOC_AUTOBRIEF YES)
# The headers' macros: TENEX_API is the export attribute; the generated config.hpp and
# export.hpp come from the build tree.
set(DOXYGEN_ENABLE_PREPROCESSING YES)
set(DOXYGEN_MACRO_EXPANSION YES)
set(DOXYGEN_EXPAND_ONLY_PREDEF YES)
set(DOXYGEN_PREDEFINED "TENEX_API=")
set(DOXYGEN_SEARCH_INCLUDES YES)
set(DOXYGEN_INCLUDE_PATH ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
# Warnings: every one fails the run (after the whole reference is written), printed on
# stderr; documenting every member is not required.
set(DOXYGEN_WARNINGS YES)
set(DOXYGEN_WARN_IF_UNDOCUMENTED NO)
set(DOXYGEN_WARN_IF_DOC_ERROR YES)
set(DOXYGEN_WARN_NO_PARAMDOC NO)
set(DOXYGEN_WARN_AS_ERROR FAIL_ON_WARNINGS)

doxygen_add_docs(docs ${PROJECT_SOURCE_DIR}/include/tenex
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "API reference: Doxygen over include/tenex/ into ${TENEX_DOCS_DIR}/html")

if(TENEX_BUILD_TESTS)
  # The Doxyfile doxygen_add_docs wrote, run as the target runs it.
  add_test(NAME api_docs COMMAND Doxygen::doxygen ${CMAKE_CURRENT_BINARY_DIR}/Doxyfile.docs
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(api_docs PROPERTIES LABELS check TIMEOUT 300)
endif()
