#pragma once
// The tensor-expression text language (`.te` files; docs/frontend.md is its reference):
//
//   axes b=1 s=4 t=4 h=2 d=8 e=8
//   input q[b,s,h,d] : f32
//   scores[b,s,h,t] = q[b,s,h,d] * k[b,t,h,d]          # sums over d (absent from the target)
//   x[b,s,h,t] = where(t <= s, scores[b,s,h,t] * 0.125, -inf)
//   m[b,s,h] = max(t) x[b,s,h,t]
//   output o
//
// One statement per line (a line continues while a bracket or parenthesis is open); `#` starts a
// comment. The parser never crashes: the first error is a UserError(kExitMalformed) located at
// FILE:LINE:COL ("expected WHAT, found WHAT" for syntax; what is wrong for semantics).

#include <optional>
#include <string>
#include <string_view>

#include "frontend/autodiff.h"
#include "frontend/tensor_expr.h"
#include "core/ir.h"

namespace fp::fe {

struct ParsedProgram {
  Program program;
  // Present when the file asks for a training step (`grad` and `loss` statements).
  std::optional<GradRequest> grad;
};

// Parses a whole file. `default_name` names the routine unless a `routine NAME` line does.
ParsedProgram parse_program(std::string_view text, const std::string& file,
                            const std::string& default_name = "main");

// Parses and lowers: the forward routine, or the training step when the file requests one.
Routine lower_source(std::string_view text, const std::string& file, const std::string& default_name = "main",
                     bool differentiable_max = false);

}  // namespace fp::fe
