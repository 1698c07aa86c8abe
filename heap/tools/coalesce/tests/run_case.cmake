# One manyalloc-coalesce check (cmake -P), MODE:
#   corpus      CORPUS/CASE.cu rewritten into WORK (with -o, and in place on a
#               copy) equals CORPUS/CASE.expected.cu
#   idempotent  CASE.expected.cu rewritten again is unchanged
#   nvcc        CASE.expected.cu compiles with NVCC (-c, NVCC_ARCH, default
#               -arch=sm_90, and NVCC_FLAGS) against INCLUDES
#   unparsable  CORPUS/CASE.cu: the tool fails with an error naming the file,
#               and the file (rewritten in place) keeps its bytes
# A case's first lines may hold "// manyalloc-coalesce-args: ARGS" (tool options).
include(${CMAKE_CURRENT_LIST_DIR}/../../../../cmake/ScriptRun.cmake)
file(MAKE_DIRECTORY ${WORK})
set(input ${CORPUS}/${CASE}.cu)
set(expected ${CORPUS}/${CASE}.expected.cu)

set(tool_args "")
file(STRINGS ${input} arg_lines REGEX "^// manyalloc-coalesce-args: ")
foreach(l IN LISTS arg_lines)
  string(REGEX REPLACE "^// manyalloc-coalesce-args: " "" a "${l}")
  separate_arguments(a UNIX_COMMAND "${a}")
  list(APPEND tool_args ${a})
endforeach()

function(expect_same_file got want what)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${got} ${want} RESULT_VARIABLE differ)
  if(differ)
    execute_process(COMMAND diff -u ${want} ${got} OUTPUT_VARIABLE d ERROR_VARIABLE d)
    message(FATAL_ERROR "${what}: ${got} differs from ${want}:\n${d}")
  endif()
endfunction()

if(MODE STREQUAL "corpus")
  run("manyalloc-coalesce on ${input}" ${TOOL} ${tool_args} ${input} -o ${WORK}/${CASE}.out.cu)
  message("${run_output}")
  expect_same_file(${WORK}/${CASE}.out.cu ${expected} "rewrite of ${CASE}")
  # In place (the default) writes the same bytes.
  configure_file(${input} ${WORK}/${CASE}.inplace.cu COPYONLY)
  run("manyalloc-coalesce in place on ${CASE}.cu" ${TOOL} ${tool_args} ${WORK}/${CASE}.inplace.cu)
  expect_same_file(${WORK}/${CASE}.inplace.cu ${expected} "in-place rewrite of ${CASE}")
elseif(MODE STREQUAL "idempotent")
  # In place on a copy: an unchanged file must come back byte for byte.
  configure_file(${expected} ${WORK}/${CASE}.again.cu COPYONLY)
  run("manyalloc-coalesce on ${CASE}.expected.cu" ${TOOL} ${tool_args} ${WORK}/${CASE}.again.cu)
  message("${run_output}")
  if(NOT run_output MATCHES "; unchanged")
    message(FATAL_ERROR "the tool reports a change on an already rewritten file")
  endif()
  expect_same_file(${WORK}/${CASE}.again.cu ${expected} "second rewrite of ${CASE}")
elseif(MODE STREQUAL "nvcc")
  if(NOT NVCC_ARCH)
    set(NVCC_ARCH -arch=sm_90)
  endif()
  set(inc "")
  foreach(d IN LISTS INCLUDES)
    list(APPEND inc -I${d})
  endforeach()
  run("nvcc on ${CASE}.expected.cu" ${NVCC} -c -std=c++20 ${NVCC_ARCH} ${NVCC_FLAGS} --expt-relaxed-constexpr ${inc}
      ${expected} -o ${WORK}/${CASE}.o)
elseif(MODE STREQUAL "unparsable")
  configure_file(${input} ${WORK}/${CASE}.cu COPYONLY)
  execute_process(COMMAND ${TOOL} ${WORK}/${CASE}.cu RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "expected exit status 1 for an unparsable file, got ${rc}")
  endif()
  if(NOT out MATCHES "could not be parsed .*the file is left unchanged")
    message(FATAL_ERROR "no clear error message for the unparsable file")
  endif()
  expect_same_file(${WORK}/${CASE}.cu ${input} "unparsable file")
  file(GLOB leftovers ${WORK}/.${CASE}.cu.*)
  if(leftovers)
    message(FATAL_ERROR "temporary files left behind: ${leftovers}")
  endif()
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
