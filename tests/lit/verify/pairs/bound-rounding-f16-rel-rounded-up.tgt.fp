# Regression (issue 9): REL was rounded to nearest into the query's format, up to 2^-10, so a claim just below the real error (2^-10 relative at a = 0.0625) was reported bounded.
# VERIFY-INCORRECT
# CLAIM: bounded:0.00097656
# EXPECT: "refuted"
routine pair_bound_rounding_f16_rel_rounded_up_tgt {
  node a : f16[1] materialized input
  node o : f16[1] materialized output
  o[0] = where.f16(eq.f16(a[0], 0.0625:f16), 0.06256103515625:f16, a[0])
}
