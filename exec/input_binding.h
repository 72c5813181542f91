#pragma once
// Input validation shared by the compiled executors: exactly the checks and messages of the
// interpreter's binding (docs/semantics.md §9), so every executor rejects bad input the same way
// (a test compares the messages): a missing input is UserError 66 naming it and its expected type;
// a tensor of the wrong precision or dims, the wrong number of values, or a value not representable
// at the node's precision is 65 naming the input (and the cell).

#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp {

// "f32[2,4,1,8]"
std::string tensor_type_string(Prec p, const std::vector<std::int64_t>& dims);

// Checks the tensor bound to input node `n` and returns it; throws UserError as described above.
const Tensor& validated_input(const Node& n, const TensorMap& inputs, const std::string& source);

}  // namespace fp
