# Unpacking and patching the peer allocators' source tarballs into the build
# directory (heap/bench/peers/CMakeLists.txt). Nothing of theirs enters the
# source tree.

# manyalloc_unpack_peer(<prefix> <marker> <out_root> <out_why>): unpacks the
# newest ${MANYALLOC_PEERS_DIR}/<prefix>-*.tar.xz into
# <build>/peers-src/<prefix> (again only when the tarball changed) and sets
# <out_root> to the unpacked folder holding <marker>; on failure <out_root> is
# empty and <out_why> says why.
function(manyalloc_unpack_peer prefix marker out_root out_why)
  set(${out_root} "" PARENT_SCOPE)
  set(${out_why} "" PARENT_SCOPE)
  file(GLOB tarballs "${MANYALLOC_PEERS_DIR}/${prefix}-*.tar.xz")
  if(NOT tarballs)
    set(${out_why} "no ${prefix}-*.tar.xz in ${MANYALLOC_PEERS_DIR}" PARENT_SCOPE)
    return()
  endif()
  list(SORT tarballs)
  list(GET tarballs -1 tarball)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${tarball}")
  file(SHA256 "${tarball}" sum)
  set(dest "${CMAKE_CURRENT_BINARY_DIR}/peers-src/${prefix}")
  set(stamp "${dest}.sha256")
  set(old "")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" old)
  endif()
  if(NOT old STREQUAL sum OR NOT IS_DIRECTORY "${dest}")
    file(REMOVE_RECURSE "${dest}")
    file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${dest}")
    file(WRITE "${stamp}" "${sum}")
    message(STATUS "manyalloc peers: unpacked ${tarball}")
  endif()
  file(GLOB found "${dest}/*/${marker}" "${dest}/${marker}")
  if(NOT found)
    set(${out_why} "${tarball} holds no ${marker}" PARENT_SCOPE)
    return()
  endif()
  list(GET found 0 first)
  string(LENGTH "/${marker}" tail)
  string(LENGTH "${first}" len)
  math(EXPR keep "${len} - ${tail}")
  string(SUBSTRING "${first}" 0 ${keep} root)
  set(${out_root} "${root}" PARENT_SCOPE)
endfunction()

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
