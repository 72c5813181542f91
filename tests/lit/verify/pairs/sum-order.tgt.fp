# Summing in reverse order is not bitwise equal.
# VERIFY-INCORRECT
# CLAIM: exact
# EXPECT: "not bitwise"
routine pair_sum_order_tgt {
  node a : f32[3] materialized input
  node o : f32[1] materialized output
  zero o
  for i in 0..2 {
    o[0] = add.f32(o[0], a[2 - i])
  }
}
