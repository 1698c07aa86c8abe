# The peers folder (-DMANYALLOC_PEERS_DIR) and unpacking its source tarballs
# into the build directory at configure time: the heap's peer GPU allocators
# (heap/bench/peers) and mimalloc-bench (numa/bench/mibench). Nothing of
# theirs enters the source tree; without the folder or a tarball, the caller
# says visibly what it skipped.
include_guard(GLOBAL)
set(MANYALLOC_PEERS_DIR "" CACHE PATH
    "Folder with the peers' source tarballs (see the peers' README; .carry/peers on the GPU machine)")

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
