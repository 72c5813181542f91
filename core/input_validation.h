#pragma once
// Input validation, one definition for every executor (docs/semantics.md §9): the interpreter
// binds its inputs with it and so do the compiled executors, so every executor rejects bad input
// with the same message: a missing input is UserError 66 naming it and its expected type; a tensor
// of the wrong precision or dims, the wrong number of values, or a value not representable at the
// node's precision is 65 naming the input (and the cell).

#include <cstdint>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp {

// "f32[2,4,1,8]"
std::string tensor_type_string(Prec p, const std::vector<std::int64_t>& dims);

// The index of flat cell `flat` of a C-order tensor with `dims`.
std::vector<std::int64_t> cell_index(const std::vector<std::int64_t>& dims, std::int64_t flat);
// "[0,2,1,3]": a cell's index as messages write it.
std::string index_text(const std::vector<std::int64_t>& index);
// index_text(cell_index(dims, flat)).
std::string cell_text(const std::vector<std::int64_t>& dims, std::int64_t flat);

// Checks the tensor bound to input node `n` and returns it; throws UserError as described above.
// `source` names the routine's file in the message.
const Tensor& validated_input(const Node& n, const TensorMap& inputs, const std::string& source);

// Checks that the tensor read from the .npy file `path` fits input node `n` (precision and dims);
// otherwise throws UserError 65 located at `path`, naming the input and both types, also in
// NumPy's words (dtype and shape), since that is how the file was likely made:
//   x.npy: expected f32[2,4] (dtype '<f4', shape (2, 4)) for input 'x', found f64[4] (dtype '<f8',
//   shape (4,))
void check_input_file(const Node& n, const Tensor& t, const std::string& path);

}  // namespace fp
