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
