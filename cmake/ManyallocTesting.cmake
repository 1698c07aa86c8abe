# GoogleTest: the Debian package (libgtest-dev) where installed; otherwise a
# source tree given by MANYALLOC_GTEST_SOURCE_DIR (the GPU machine has none
# installed, so scripts/gpu_run.sh carries /usr/src/googletest along).
find_package(GTest QUIET)
if(NOT GTest_FOUND)
  if(MANYALLOC_GTEST_SOURCE_DIR)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(${MANYALLOC_GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/_gtest EXCLUDE_FROM_ALL)
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
  else()
    message(FATAL_ERROR "GoogleTest not found: run scripts/setup.sh or set MANYALLOC_GTEST_SOURCE_DIR")
  endif()
endif()
include(GoogleTest)

# Layers of the tests. Each layer's tests/CMakeLists.txt starts with
# manyalloc_test_layer(<layer>): every test added in that directory and
# below carries the label <layer> (the directory property LABELS, which
# ctest also applies to the tests gtest_discover_tests adds), and at the end
# of the directory every add_test name there and below must start with
# "<layer>." (else configuring fails). `ctest -L heap|numa|region|common`
# then selects one layer; scripts/check_test_labels.sh checks a build dir.
set(MANYALLOC_TEST_LAYERS heap numa region common)

function(manyalloc_test_layer layer)
  if(NOT layer IN_LIST MANYALLOC_TEST_LAYERS)
    message(FATAL_ERROR "manyalloc_test_layer: '${layer}' is not one of: ${MANYALLOC_TEST_LAYERS}")
  endif()
  set_property(DIRECTORY PROPERTY LABELS ${layer})
  set(MANYALLOC_TEST_LAYER ${layer} PARENT_SCOPE)
  # DEFER evaluates its arguments when the call runs: pass them as values.
  cmake_language(EVAL CODE
    "cmake_language(DEFER CALL _manyalloc_check_test_names [[${CMAKE_CURRENT_SOURCE_DIR}]] ${layer})")
endfunction()

# gtest_discover_tests with the layer's name prefix: "<layer>." before
# "Suite.Test", and "<layer>.<sub>" with SUBPREFIX <sub> (e.g. "api." ->
# numa.api.Suite.Test). The other arguments go to gtest_discover_tests as
# given (no TEST_PREFIX among them).
function(manyalloc_discover_tests target)
  if(NOT MANYALLOC_TEST_LAYER)
    message(FATAL_ERROR "manyalloc_discover_tests(${target}): call manyalloc_test_layer() first")
  endif()
  set(args ${ARGN})
  set(sub "")
  if(ARGC GREATER 2 AND ARGV1 STREQUAL "SUBPREFIX")
    set(sub ${ARGV2})
    list(REMOVE_AT args 0 1)
  endif()
  if("TEST_PREFIX" IN_LIST args)
    message(FATAL_ERROR "manyalloc_discover_tests(${target}): use SUBPREFIX, not TEST_PREFIX")
  endif()
  gtest_discover_tests(${target} TEST_PREFIX "${MANYALLOC_TEST_LAYER}.${sub}" ${args})
endfunction()

function(_manyalloc_check_test_names dir layer)
  get_property(tests DIRECTORY ${dir} PROPERTY TESTS)
  foreach(t IN LISTS tests)
    if(NOT t MATCHES "^${layer}\\.")
      message(FATAL_ERROR "test '${t}' (${dir}): the name must start with '${layer}.'")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    _manyalloc_check_test_names(${d} ${layer})
  endforeach()
endfunction()
