#pragma once
// The reference interpreter: runs a routine exactly as core/ir.h's SEMANTICS say, at every
// precision. It is the oracle the compiled executors and the rewrites are checked against.

#include <map>
#include <string>

#include "core/ir.h"
#include "core/tensor.h"

namespace fp {

using TensorMap = std::map<std::string, Tensor>;

struct InterpretOptions {
  // Where the routine came from, for messages ("attn.fp").
  std::string source_name;
};

// Runs `routine` (which must pass the well-formedness checker) on `inputs` — one tensor per
// input node, matching its dims — and returns one tensor per output node.
// Throws UserError: kExitMissingInput (66) naming a missing input; kExitMalformed (65) naming the
// input and its expected dims/precision when a tensor does not match, or when an input holds a
// value not representable at the node's precision.
TensorMap interpret(const Routine& routine, const TensorMap& inputs, const InterpretOptions& opts = {});

// interpret() compiles the routine on every call; to run one routine many times, keep a
// CompiledRoutine (core/interpreter_program.h). docs/semantics.md §9 describes both.

}  // namespace fp
