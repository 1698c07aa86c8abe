# ctest script (region.install.c_consumer): a region-only build of the source
# tree (no numa layer, no tests, CUDA off, benchmarks and manyalloc-coalesce
# left at their defaults but not built: only the library is built) installed
# with `cmake --install` into a scratch
# prefix; then the C program consumer.c is built against the installation
# three ways and each run with 2 ranks:
#   mpicc consumer.c -I... -L... -lmanyalloc-region
#   cc consumer.c $(pkg-config --cflags --libs manyalloc-region)
#   a C-only CMake project: find_package(manyalloc), manyalloc::region
# and the installed library is checked for MPI C++ bindings (none may be
# needed). Arguments (-D): SOURCE_DIR WORK_DIR GENERATOR C_COMPILER
# CXX_COMPILER MPI_C_COMPILER MPI_CXX_COMPILER MPIEXEC NUMPROC_FLAG
# MPIEXEC_EXTRA (;-list) PKG_CONFIG NM READELF.
include(${SOURCE_DIR}/cmake/ScriptRun.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
set(B ${WORK_DIR}/build)
set(P ${WORK_DIR}/prefix)
run("configuring the region-only build"
    ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${B} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DMPI_C_COMPILER=${MPI_C_COMPILER} -DMPI_CXX_COMPILER=${MPI_CXX_COMPILER} -DMPIEXEC_EXECUTABLE=${MPIEXEC}
    -DMANYALLOC_CUDA=OFF -DMANYALLOC_BUILD_NUMA=OFF -DMANYALLOC_BUILD_TESTS=OFF
    -DMANYALLOC_BUILD_BENCHMARKS=ON)
run("building the region library" ${CMAKE_COMMAND} --build ${B} --target manyalloc_region)
run("cmake --install" ${CMAKE_COMMAND} --install ${B} --prefix ${P})

# The library and, next to the CMake package, the pkg-config file.
file(GLOB libs ${P}/lib*/libmanyalloc-region.so ${P}/lib*/*/libmanyalloc-region.so)
list(LENGTH libs n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "installed libmanyalloc-region.so: found '${libs}'")
endif()
get_filename_component(LIBDIR ${libs} DIRECTORY)
foreach(f ${LIBDIR}/cmake/manyalloc/manyallocConfig.cmake ${LIBDIR}/pkgconfig/manyalloc-region.pc)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

# No MPI C++ bindings in the library's link or its symbols.
run("readelf" ${READELF} -d ${libs})
if(run_output MATCHES "mpi_cxx|mpicxx|mpichcxx")
  message(FATAL_ERROR "the library needs MPI's C++ bindings:\n${run_output}")
endif()
run("nm" ${NM} -D --undefined-only ${libs})
if(run_output MATCHES "_ZN3MPI|ompi_mpi_cxx")
  message(FATAL_ERROR "the library references MPI's C++ bindings:\n${run_output}")
endif()

# 1. mpicc with -lmanyalloc-region.
run("mpicc -lmanyalloc-region" ${MPI_C_COMPILER} ${SOURCE_DIR}/region/tests/install/consumer.c -I${P}/include
    -L${LIBDIR} -lmanyalloc-region -Wl,-rpath,${LIBDIR} -o ${WORK_DIR}/consumer_mpicc)
# 2. The plain C compiler with pkg-config's flags (MPI's through the .pc's Requires).
set(ENV{PKG_CONFIG_PATH} ${LIBDIR}/pkgconfig)
run("pkg-config" ${PKG_CONFIG} --cflags --libs manyalloc-region)
string(STRIP "${run_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("cc $(pkg-config manyalloc-region)" ${C_COMPILER} ${SOURCE_DIR}/region/tests/install/consumer.c ${flags}
    -Wl,-rpath,${LIBDIR} -o ${WORK_DIR}/consumer_pkgconfig)
# 3. A C-only CMake project.
run("configuring the CMake consumer"
    ${CMAKE_COMMAND} -S ${SOURCE_DIR}/region/tests/install -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${P} -DCMAKE_C_COMPILER=${C_COMPILER} -DMPI_C_COMPILER=${MPI_C_COMPILER})
run("building the CMake consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)

foreach(exe ${WORK_DIR}/consumer_mpicc ${WORK_DIR}/consumer_pkgconfig ${WORK_DIR}/consumer/consumer_cmake)
  run("running ${exe}" ${MPIEXEC} ${NUMPROC_FLAG} 2 ${MPIEXEC_EXTRA} ${exe})
  if(NOT run_output MATCHES "consumer: ok")
    message(FATAL_ERROR "${exe}: no 'consumer: ok' in\n${run_output}")
  endif()
  message(STATUS "${exe}: ${run_output}")
endforeach()
