# Unpacking and patching the peer allocators' source tarballs into the build
# directory (heap/bench/peers/CMakeLists.txt). Nothing of theirs enters the
# source tree. The unpacking itself (manyalloc_unpack_peer) is shared with
# mimalloc-bench: cmake/ManyallocPeers.cmake.
include(ManyallocPeers)

# manyalloc_patch_ouroboros(<root> <out_why>): CUDA 13 removed
# cudaDeviceProp::clockRate, which Ouroboros prints in include/Statistics.h;
# ${MANYALLOC_PEERS_DIR}/ouroboros-cuda13.diff replaces it by 0. Applied with
# patch (or git apply) when the source still has it; a tarball that comes
# patched already is left alone.
function(manyalloc_patch_ouroboros root out_why)
  set(${out_why} "" PARENT_SCOPE)
  file(READ "${root}/include/Statistics.h" text)
  string(FIND "${text}" "prop.clockRate" at)
  if(at EQUAL -1)
    return()  # patched already
  endif()
  set(diff "${MANYALLOC_PEERS_DIR}/ouroboros-cuda13.diff")
  if(NOT EXISTS "${diff}")
    set(${out_why} "its source uses cudaDeviceProp::clockRate (gone in CUDA 13) and ${diff} is missing" PARENT_SCOPE)
    return()
  endif()
  find_program(MANYALLOC_PATCH_EXECUTABLE patch)
  find_program(MANYALLOC_GIT_EXECUTABLE git)
  if(MANYALLOC_PATCH_EXECUTABLE)
    execute_process(COMMAND ${MANYALLOC_PATCH_EXECUTABLE} -p0 -N -i "${diff}" WORKING_DIRECTORY "${root}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  elseif(MANYALLOC_GIT_EXECUTABLE)
    execute_process(COMMAND ${MANYALLOC_GIT_EXECUTABLE} apply -p0 "${diff}" WORKING_DIRECTORY "${root}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  else()
    set(rc "neither patch nor git found")
  endif()
  if(NOT rc EQUAL 0)
    set(${out_why} "applying ${diff} failed: ${rc} ${out}" PARENT_SCOPE)
  else()
    message(STATUS "manyalloc peers: applied ouroboros-cuda13.diff")
  endif()
endfunction()
