# Nor is it within a relative bound: with cancellation the sum can be 0 one way and not the other.
# VERIFY-INCORRECT
# CLAIM: bounded:1e-3
# EXPECT: "refuted"
routine pair_sum_order_bounded_tgt {
  node a : f32[3] materialized input
  node o : f32[1] materialized output
  zero o
  for i in 0..2 {
    o[0] = add.f32(o[0], a[2 - i])
  }
}
