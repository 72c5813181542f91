# The warning set, and -Werror under FLASHPROOF_WERROR, on flashproof's own targets only (every
# library, program, test and benchmark this build defines): a project that adds flashproof with
# add_subdirectory, and the compile checks CMake runs, keep their own flags. C and C++ sources only
# (nvcc takes other flags). Called once, at the end of the top-level CMakeLists.txt.
function(flashproof_apply_warnings dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      target_compile_options(${target} PRIVATE
        $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wshadow $<$<BOOL:${FLASHPROOF_WERROR}>:-Werror>>)
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    flashproof_apply_warnings(${sub})
  endforeach()
endfunction()
