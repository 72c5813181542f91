# Regression (issue 9), the f32 twin: one ulp up at a = 2^-13 is 2^-23 relative, just above the claimed 1.1920928955e-07.
# VERIFY-INCORRECT
# CLAIM: bounded:1.1920928955e-07
# EXPECT: "refuted"
routine pair_bound_rounding_f32_rel_rounded_up_tgt {
  node a : f32[1] materialized input
  node o : f32[1] materialized output
  o[0] = where.f32(eq.f32(a[0], 0.0001220703125:f32), 0.00012207032705191523:f32, a[0])
}
