#pragma once
// One-line summaries of output tensors: what a user glances at after `flashproof run`.

#include <string>

#include "core/interpreter.h"

namespace fp {

// "o  f32[1,4,2,8]  min -0.8 max 0.9 mean 0.01  nan 0 inf 0" per tensor, aligned.
std::string format_tensor_summaries(const TensorMap& tensors);

}  // namespace fp
