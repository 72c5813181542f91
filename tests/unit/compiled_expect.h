#pragma once
// The compiled C executor against the interpreter on a batch of routines (compiled together),
// each on its own deterministic inputs: every output bitwise equal, and with `twice`, a second run
// of the same program giving the same bits again.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention_reference.h"
#include "core/interpreter.h"
#include "exec/c_executor.h"
#include "jit_test_options.h"
#include "tensor_expect.h"

namespace fp::testing {

inline void expect_compiled_bitwise(const std::vector<Routine>& rs, const std::vector<std::string>& names,
                                    bool twice = false) {
  auto progs = compile_c_batch(rs, jit_test_options());
  ASSERT_EQ(progs.size(), rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    SCOPED_TRACE(names[i]);
    TensorMap in = testref::make_inputs(rs[i], 5 + i);
    TensorMap first = progs[i]->run(in);
    EXPECT_TRUE(bitwise_equal(interpret(rs[i], in), first));
    if (twice) {
      EXPECT_TRUE(bitwise_equal(first, progs[i]->run(in)));
    }
  }
}

}  // namespace fp::testing
