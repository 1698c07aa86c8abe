# ctest script: installs the build tree into a scratch prefix, then checks
# one way of using the installation (PART):
#   find_package     (heap.install.find_package) configures, builds and runs
#                    examples/consumer with find_package(manyalloc);
#   numa_pkg_config  (numa.install.pkg_config) builds
#                    numa/tests/install/consumer.c with
#                    `cc consumer.c $(pkg-config --cflags --libs manyalloc-numa)`,
#                    the .pc file found next to the CMake package, and runs it.
# Arguments (-D): PART BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR; for
# numa_pkg_config also C_COMPILER PKG_CONFIG.
include(${CMAKE_CURRENT_LIST_DIR}/ScriptRun.cmake)

if(NOT PART MATCHES "^(find_package|numa_pkg_config)$")
  message(FATAL_ERROR "InstallTest.cmake: PART must be find_package or numa_pkg_config, not '${PART}'")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
set(P ${WORK_DIR}/prefix)
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${P})

if(PART STREQUAL "find_package")
  run("configuring the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/consumer -B ${WORK_DIR}/build
      -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${P})
  run("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
  run("running the consumer" ${WORK_DIR}/build/consumer)
  return()
endif()

# numa_pkg_config: the library and, next to the CMake package, its .pc file.
file(GLOB libs ${P}/lib*/libmanyalloc-numa.so ${P}/lib*/*/libmanyalloc-numa.so)
list(LENGTH libs n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "installed libmanyalloc-numa.so: found '${libs}'")
endif()
get_filename_component(LIBDIR ${libs} DIRECTORY)
foreach(f ${LIBDIR}/cmake/manyalloc/manyallocConfig.cmake ${LIBDIR}/pkgconfig/manyalloc-numa.pc)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
set(ENV{PKG_CONFIG_PATH} ${LIBDIR}/pkgconfig)
run("pkg-config" ${PKG_CONFIG} --cflags --libs manyalloc-numa)
string(STRIP "${run_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("cc $(pkg-config manyalloc-numa)" ${C_COMPILER} ${SOURCE_DIR}/numa/tests/install/consumer.c ${flags}
    -Wl,-rpath,${LIBDIR} -o ${WORK_DIR}/consumer)
run("running the consumer" ${WORK_DIR}/consumer)
if(NOT run_output MATCHES "consumer: ok")
  message(FATAL_ERROR "${WORK_DIR}/consumer: no 'consumer: ok' in\n${run_output}")
endif()
message(STATUS "${run_output}")
