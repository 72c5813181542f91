# Rounding through bf16 is within 2^-8 relative for normal values, but not for subnormals (bf16
# has f32's exponent range with 8-bit significands): not a relative bound, even at 2^-8.
# VERIFY-INCORRECT
# CLAIM: bounded:0.00390625
# EXPECT: "refuted"
routine pair_bf16_rounding_tgt {
  node a : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = cast.f32(cast.bf16(a[i]))
  }
}
