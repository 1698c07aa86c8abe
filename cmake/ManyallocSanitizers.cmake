# MANYALLOC_SANITIZE applies to host code of every target in the tree
# (CUDA device code is never instrumented; CUDA targets are not built with
# sanitizers because the CUDA runtime is not instrumented either).
if(MANYALLOC_SANITIZE)
  set(_flags "")
  foreach(s IN LISTS MANYALLOC_SANITIZE)
    list(APPEND _flags "-fsanitize=${s}")
  endforeach()
  list(APPEND _flags -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${_flags}>")
  message(STATUS "manyalloc: sanitizers ${MANYALLOC_SANITIZE}")
endif()
