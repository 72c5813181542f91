# The same pair at exactly its error (2^-10 relative): the bound holds with equality, so it is proved, not refuted.
# VERIFY
# CLAIM: bounded:0.0009765625
# EXPECT: "bounded"
routine pair_bound_rounding_f16_exact_boundary_tgt {
  node a : f16[1] materialized input
  node o : f16[1] materialized output
  o[0] = where.f16(eq.f16(a[0], 0.0625:f16), 0.06256103515625:f16, a[0])
}
