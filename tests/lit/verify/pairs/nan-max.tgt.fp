# A max written as a comparison and a select: it differs from max on NaN (a NaN operand of lt selects the other operand) and on signed zeros.
# VERIFY-INCORRECT
# CLAIM: exact
# EXPECT: "refuted"
routine pair_nan_max_tgt {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = where.f32(lt.f32(a[i], b[i]), b[i], a[i])
  }
}
