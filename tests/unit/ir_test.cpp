#include "core/ir.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fp {
namespace {

TEST(Ir, StructuralEqualityIgnoresLocationAndSharesNothing) {
  auto a = binary(BinOp::Add, get("x", {Index::iter("i")}, Prec::F32), constant(1.0, Prec::F32), Prec::F32);
  auto b = binary(BinOp::Add, get("x", {Index::iter("i")}, Prec::F32), constant(1.0, Prec::F32), Prec::F32);
  EXPECT_TRUE(equal(a, b));
  auto c = binary(BinOp::Add, get("x", {Index::iter("j")}, Prec::F32), constant(1.0, Prec::F32), Prec::F32);
  EXPECT_FALSE(equal(a, c));
  EXPECT_FALSE(equal(constant(0.0, Prec::F32), constant(-0.0, Prec::F32)));
  EXPECT_TRUE(equal(constant(NAN, Prec::F32), constant(-NAN, Prec::F32)));
}

TEST(Ir, IndexCanonicalMergesTermsAndDropsZeros) {
  Index i{{{2, "tb"}, {1, "j"}, {-2, "tb"}}, 3};
  Index c = i.canonical();
  ASSERT_EQ(c.terms.size(), 1u);
  EXPECT_EQ(c.terms[0].sym, "j");
  EXPECT_EQ(c.offset, 3);
  EXPECT_TRUE(Index::iter("t").is_plain_iterator());
  EXPECT_FALSE((Index{{{1, "t"}}, 1}).is_plain_iterator());
}

}  // namespace
}  // namespace fp
