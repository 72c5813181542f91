# Build rules of the online-softmax member's proofs (included by verify/CMakeLists.txt).
# The fused backward's bound evaluates its per-pair formulas in doubles rounded upward
# (fesetround): the compiler must honour the dynamic rounding mode there.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/bounds/backward_bound.cpp PROPERTIES COMPILE_OPTIONS -frounding-math)
