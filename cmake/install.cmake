# Installation: the libraries, the `flashproof` program, the headers, an exported CMake package
# (find_package(flashproof) -> flashproof::core, flashproof::verify, ...) and a pkg-config file.
# docs/packaging.md says how a consumer uses each; tests/package/ builds one against an installed
# tree.
#
# Layout under the prefix:
#   bin/flashproof
#   lib/libflashproof_<layer>.a                     static libraries, one per layer
#   include/flashproof/<layer>/…/*.h                the public headers and what they include, folders
#                                                   kept, so that #include "core/ir.h" works as in
#                                                   the sources
#   share/flashproof/public-headers.txt             their list
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

# Two components (docs/packaging.md): `runtime` is the program alone (what a CI job needs:
# `cmake --install build --component runtime --strip`), `development` the libraries, headers and
# package files. A plain `cmake --install` installs both.
install(TARGETS ${FLASHPROOF_LIBRARIES} flashproof
  EXPORT flashproofTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)

# The public headers: the library API a consumer calls (docs/packaging.md, "The library API"), and
# every header they include, found by following their `#include "…"` lines through the source tree.
# Nothing else is installed: the solver-facing internals (verify/smt/z3_common.h includes z3++.h),
# the MPFR helpers, the code generators' internals and the command-line program's sources stay in
# the tree. tools/ is the program; of it only the diff adapter (library flashproof_diff) is public.
set(FLASHPROOF_PUBLIC_HEADERS
  core/ir.h core/text_parser.h core/text_printer.h core/checker.h core/interpreter.h core/diagnostic.h
  core/npy.h core/placement.h core/memory_report.h
  frontend/attention.h frontend/tensor_expr.h frontend/lower.h frontend/autodiff.h
  rewrites/tier.h rewrites/members.h rewrites/config.h
  exec/executor.h
  pipeline/checked_tier.h pipeline/prepared_program.h
  verify/engine.h verify/report.h verify/diff_plan.h verify/compare.h verify/checkers.h
  tools/diff_report.h)

# The headers `roots` include, transitively, into `out` (paths relative to the source tree).
function(flashproof_header_closure out)
  set(todo ${ARGN})
  set(done "")
  while(todo)
    list(POP_FRONT todo header)
    if(header IN_LIST done)
      continue()
    endif()
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${header})
      message(FATAL_ERROR "public header ${header} does not exist")
    endif()
    list(APPEND done ${header})
    file(STRINGS ${PROJECT_SOURCE_DIR}/${header} includes REGEX "^#include \"[^\"]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      # flashproof/version.h is generated (installed below).
      if(NOT included MATCHES "^flashproof/")
        list(APPEND todo ${included})
      endif()
    endforeach()
  endwhile()
  list(SORT done)
  set(${out} ${done} PARENT_SCOPE)
endfunction()

flashproof_header_closure(FLASHPROOF_INSTALLED_HEADERS ${FLASHPROOF_PUBLIC_HEADERS})
foreach(header IN LISTS FLASHPROOF_INSTALLED_HEADERS)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashproof/${folder} COMPONENT development)
endforeach()
# The list, for the package test and for a reader: share/flashproof/public-headers.txt.
string(REPLACE ";" "\n" FLASHPROOF_INSTALLED_HEADERS_TEXT "${FLASHPROOF_INSTALLED_HEADERS}")
file(WRITE ${PROJECT_BINARY_DIR}/cmake/public-headers.txt "${FLASHPROOF_INSTALLED_HEADERS_TEXT}\n")
install(FILES ${PROJECT_BINARY_DIR}/cmake/public-headers.txt DESTINATION ${CMAKE_INSTALL_DATADIR}/flashproof COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/generated/flashproof/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashproof COMPONENT development)

install(EXPORT flashproofTargets
  NAMESPACE flashproof::
  FILE flashproofTargets.cmake
  DESTINATION ${FLASHPROOF_INSTALL_CMAKEDIR} COMPONENT development)
configure_package_config_file(cmake/flashproofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/flashproofConfig.cmake
  INSTALL_DESTINATION ${FLASHPROOF_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/flashproofConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/flashproofConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/flashproofConfigVersion.cmake
  DESTINATION ${FLASHPROOF_INSTALL_CMAKEDIR} COMPONENT development)

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
install(FILES ${PROJECT_BINARY_DIR}/cmake/flashproof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
