# Regression (issue 9): |t - s| was computed as |fp.sub(RTP, t, s)|, which rounds a negative difference's magnitude down: at a = 0.8125 the target gives -2^-40, an error of 0.8125 + 2^-40 > 1·|0.8125|.
# VERIFY-INCORRECT
# CLAIM: bounded:1
# EXPECT: "refuted"
routine pair_bound_rounding_negative_difference_tgt {
  node a : f32[1] materialized input
  node o : f32[1] materialized output
  o[0] = where.f32(eq.f32(a[0], 0.8125:f32), -9.094947017729282e-13:f32, a[0])
}
