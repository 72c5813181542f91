# Runs one step of the package tests (tests/package/CMakeLists.txt) with `cmake -P`.
# Inputs (-D): STEP (install | consumer | pkgconfig), BUILD_DIR, WORK_DIR, PREFIX, SOURCE_DIR,
# VERSION, LIBDIR (CMAKE_INSTALL_LIBDIR), DATADIR (CMAKE_INSTALL_DATADIR), GENERATOR, CXX_COMPILER,
# CXX_LAUNCHER (may be empty), PKG_CONFIG, DOCS (docs/packaging.md, whose library API example the
# consumer builds).
cmake_minimum_required(VERSION 3.22)

# Runs a command; on failure stops the test with its output.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " shown "${ARGN}")
    message(FATAL_ERROR "${what} failed (${rc}): ${shown}\n${out}\n${err}")
  endif()
  set(run_output "${out}${err}" PARENT_SCOPE)
endfunction()

# The routine both consumers run, and what they must print for it.
set(routine ${SOURCE_DIR}/consumer/softmax_row.fp)
set(expected "flashproof ${VERSION}: softmax_row: l = 1.50321472, m = 3")

function(expect_output program)
  run("${program}" ${program} ${routine})
  string(FIND "${run_output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${program} printed:\n${run_output}\nexpected a line starting:\n${expected}")
  endif()
  message(STATUS "${program}: ${run_output}")
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${WORK_DIR})
  file(MAKE_DIRECTORY ${WORK_DIR})
  run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  foreach(f bin/flashproof include/flashproof/core/ir.h include/flashproof/version.h)
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "the installed tree lacks ${f}")
    endif()
  endforeach()
  # The installed program runs from the prefix, with nothing of the build tree.
  run("installed flashproof" ${PREFIX}/bin/flashproof check ${SOURCE_DIR}/consumer/softmax_row.fp)
  # Only the public headers' closure is installed: every listed header, and no other.
  file(STRINGS ${PREFIX}/${DATADIR}/flashproof/public-headers.txt listed)
  file(GLOB_RECURSE installed RELATIVE ${PREFIX}/include/flashproof ${PREFIX}/include/flashproof/*.h)
  list(REMOVE_ITEM installed version.h)
  list(SORT installed)
  list(SORT listed)
  if(NOT installed STREQUAL listed)
    message(FATAL_ERROR "installed headers differ from public-headers.txt:\n${installed}\nvs\n${listed}")
  endif()
  foreach(internal verify/smt/z3_common.h verify/bounds/mpfr_up.h verify/checkers/builtin.h core/checker_internal.h)
    if(EXISTS ${PREFIX}/include/flashproof/${internal})
      message(FATAL_ERROR "the internal header ${internal} was installed")
    endif()
  endforeach()
  foreach(public core/ir.h rewrites/tier.h verify/engine.h verify/report.h exec/executor.h)
    if(NOT ${public} IN_LIST installed)
      message(FATAL_ERROR "the public header ${public} was not installed")
    endif()
  endforeach()

elseif(STEP STREQUAL "consumer")
  set(build ${WORK_DIR}/consumer-build)
  file(REMOVE_RECURSE ${build})
  set(launcher "")
  if(CXX_LAUNCHER)
    set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
  endif()
  # CMAKE_FIND_USE_* off: the package must come from PREFIX, not from a system-wide install or the
  # user package registry.
  # The example is the page's ```cpp block that starts with its file name.
  file(READ ${DOCS} page)
  string(FIND "${page}" "```cpp\n// verify_rewrites.cpp" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "${DOCS} has no verify_rewrites.cpp example")
  endif()
  math(EXPR start "${start} + 7")
  string(SUBSTRING "${page}" ${start} -1 rest)
  string(FIND "${rest}" "```" end)
  string(SUBSTRING "${rest}" 0 ${end} example)
  file(WRITE ${WORK_DIR}/verify_rewrites.cpp "${example}")
  run("configuring the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${build} -G ${GENERATOR}
      -DFLASHPROOF_EXAMPLE=${WORK_DIR}/verify_rewrites.cpp
      -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${launcher} -DCMAKE_PREFIX_PATH=${PREFIX}
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
  string(FIND "${run_output}" "flashproof ${VERSION} found in ${PREFIX}/" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the consumer did not find flashproof ${VERSION} in ${PREFIX}:\n${run_output}")
  endif()
  run("building the consumer" ${CMAKE_COMMAND} --build ${build})
  expect_output(${build}/flashproof_consumer)
  # docs/packaging.md's library API example, built and run as the page says, on an attention
  # program the tier rewrites: it must prove some claims exact and some bounded, refute none and
  # leave none unknown.
  run("${build}/verify_rewrites" ${build}/verify_rewrites ${SOURCE_DIR}/consumer/attention.fp)
  if(NOT run_output MATCHES "summary: ([0-9]+) obligations?: ([0-9]+) exact, ([0-9]+) bounded, 0 refuted, 0 unknown, 0 error")
    message(FATAL_ERROR "the library API example's summary is not all proved:\n${run_output}")
  endif()
  if(CMAKE_MATCH_2 EQUAL 0 OR CMAKE_MATCH_3 EQUAL 0)
    message(FATAL_ERROR "the library API example proved ${CMAKE_MATCH_2} exact and ${CMAKE_MATCH_3} bounded "
                        "claims; expected some of each:\n${run_output}")
  endif()
  message(STATUS "verify_rewrites: ${run_output}")

elseif(STEP STREQUAL "pkgconfig")
  # Only the prefix's flashproof.pc: the libraries it requires (fmt, z3, ...) come from the
  # system's pkg-config folders as usual.
  set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
  run("pkg-config --modversion" ${PKG_CONFIG} --modversion flashproof)
  string(STRIP "${run_output}" pc_version)
  if(NOT pc_version STREQUAL VERSION)
    message(FATAL_ERROR "pkg-config says flashproof ${pc_version}, the build is ${VERSION}")
  endif()
  run("pkg-config --cflags --libs" ${PKG_CONFIG} --cflags --libs flashproof)
  string(STRIP "${run_output}" pc_flags)
  message(STATUS "pkg-config --cflags --libs flashproof: ${pc_flags}")
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  set(program ${WORK_DIR}/pkgconfig_consumer)
  # The consumer is one file, compiled and linked with one command and the flags pkg-config gave.
  run("compiling the pkg-config consumer" ${CXX_LAUNCHER} ${CXX_COMPILER} -std=c++20
      ${SOURCE_DIR}/consumer/main.cpp ${pc_flags} -o ${program})
  expect_output(${program})

else()
  message(FATAL_ERROR "unknown STEP '${STEP}'")
endif()
