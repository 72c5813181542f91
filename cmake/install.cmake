# Installation: the libraries, the `flashproof` program, the headers, an exported CMake package
# (find_package(flashproof) -> flashproof::core, flashproof::verify, ...) and a pkg-config file.
# docs/packaging.md says how a consumer uses each; tests/package/ builds one against an installed
# tree.
#
# Layout under the prefix:
#   bin/flashproof
#   lib/libflashproof_<layer>.a                     static libraries, one per layer
#   include/flashproof/<layer>/*.h                  the layers' headers, folders kept, so that
#                                                   #include "core/ir.h" works as in the sources
#   include/flashproof/version.h                    #include "flashproof/version.h"
#   lib/cmake/flashproof/flashproofConfig.cmake     (+ ConfigVersion, Targets)
#   lib/pkgconfig/flashproof.pc
include(CMakePackageConfigHelpers)

set(FLASHPROOF_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/flashproof CACHE STRING
    "Where the CMake package files go, relative to the prefix")
mark_as_advanced(FLASHPROOF_INSTALL_CMAKEDIR)

# In dependency order (a layer only links what is above it): the order of -l flags in flashproof.pc
# is the reverse.
set(FLASHPROOF_LIBRARIES flashproof_core flashproof_frontend flashproof_rewrites flashproof_exec flashproof_pipeline
    flashproof_verify_terms flashproof_verify_smt flashproof_verify flashproof_diff)

install(TARGETS ${FLASHPROOF_LIBRARIES} flashproof
  EXPORT flashproofTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Every header of the installed layers. tools/ is the command-line program; of it only the diff
# adapter (library flashproof_diff) is installed.
install(DIRECTORY core frontend rewrites exec pipeline verify
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashproof
  FILES_MATCHING PATTERN "*.h")
install(FILES tools/diff_report.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashproof/tools)
install(FILES ${PROJECT_BINARY_DIR}/generated/flashproof/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashproof)

install(EXPORT flashproofTargets
  NAMESPACE flashproof::
  FILE flashproofTargets.cmake
  DESTINATION ${FLASHPROOF_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/flashproofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/flashproofConfig.cmake
  INSTALL_DESTINATION ${FLASHPROOF_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/flashproofConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/flashproofConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/flashproofConfigVersion.cmake
  DESTINATION ${FLASHPROOF_INSTALL_CMAKEDIR})

# flashproof.pc is relocatable: its prefix is found from where the file lies (${pcfiledir}), so a
# tree installed with `cmake --install build --prefix DIR` (or copied elsewhere) needs no rewrite.
file(RELATIVE_PATH FLASHPROOF_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" FLASHPROOF_PC_TO_PREFIX "${FLASHPROOF_PC_TO_PREFIX}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "flashproof.pc wants CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR "
                      "relative to the prefix")
endif()
set(FLASHPROOF_PC_LIBS "")
foreach(lib IN LISTS FLASHPROOF_LIBRARIES)
  string(PREPEND FLASHPROOF_PC_LIBS "-l${lib} ")
endforeach()
string(STRIP "${FLASHPROOF_PC_LIBS}" FLASHPROOF_PC_LIBS)
set(FLASHPROOF_PC_SYSTEM_LIBS "")
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND FLASHPROOF_PC_SYSTEM_LIBS " -l${lib}")
endforeach()
if(CMAKE_THREAD_LIBS_INIT)
  string(APPEND FLASHPROOF_PC_SYSTEM_LIBS " ${CMAKE_THREAD_LIBS_INIT}")
endif()
configure_file(cmake/flashproof.pc.in ${PROJECT_BINARY_DIR}/cmake/flashproof.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/flashproof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
