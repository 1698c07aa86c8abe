# pkg-config files, installed next to the CMake package (LIBDIR/pkgconfig
# beside LIBDIR/cmake/manyalloc) and relocatable: the prefix is found from
# ${pcfiledir}.
# manyalloc_install_pkg_config(<template.pc.in> <name>) configures the
# template (@ONLY, with the caller's variables and MANYALLOC_PC_UP, the way
# from LIBDIR/pkgconfig up to the prefix, MANYALLOC_PC_LIBDIR and
# MANYALLOC_PC_INCLUDEDIR) into <name>.pc in the current binary dir and
# installs it.
function(manyalloc_install_pkg_config template name)
  foreach(kind LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
      set(MANYALLOC_PC_${kind} "${CMAKE_INSTALL_${kind}}")
    else()
      set(MANYALLOC_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
    endif()
  endforeach()
  file(RELATIVE_PATH MANYALLOC_PC_UP "/r/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/r")
  string(REGEX REPLACE "/$" "" MANYALLOC_PC_UP "${MANYALLOC_PC_UP}")
  configure_file(${template} ${CMAKE_CURRENT_BINARY_DIR}/${name}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
