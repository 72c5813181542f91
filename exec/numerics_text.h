#pragma once
// The text of core/numerics_c.h, embedded at build time (exec/CMakeLists.txt): the generated C and
// CUDA programs paste it verbatim, so they compute with the very functions the interpreter calls.

namespace fp {
const char* numerics_c_text();
}  // namespace fp
