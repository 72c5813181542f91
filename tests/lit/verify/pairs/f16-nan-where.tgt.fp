# Replacing a NaN with 0 ("sanitizing") is a NaN-handling difference.
# VERIFY-INCORRECT
# CLAIM: bounded:0.5
# EXPECT: "refuted"
routine pair_f16_nan_where_tgt {
  node a : f16[2] materialized input
  node o : f16[2] materialized output
  for i in 0..1 {
    o[i] = where.f16(eq.f16(a[i], a[i]), mul.f16(a[i], 2:f16), 0:f16)
  }
}
