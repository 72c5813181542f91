# The same pair under a relative bound: -0 and +0 are equal values, so it holds for every bound.
# VERIFY
# CLAIM: bounded:1e-9
# EXPECT: "bounded"
routine pair_negative_zero_bounded_tgt {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = a[i]
  }
}
