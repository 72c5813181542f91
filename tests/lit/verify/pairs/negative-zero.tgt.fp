# Dropping "+ 0" changes -0 into... nothing: a + 0 is +0 for a = -0, a itself is -0. Differs only in the sign of zero.
# VERIFY-INCORRECT
# CLAIM: exact
# EXPECT: "source 0, target -0"
routine pair_negative_zero_tgt {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = a[i]
  }
}
