# Source of the pair bound-rounding-f16-exact-boundary (see bound-rounding-f16-exact-boundary.tgt.fp for what is checked).
routine pair_bound_rounding_f16_exact_boundary_src {
  node a : f16[1] materialized input
  node o : f16[1] materialized output
  o[0] = a[0]
}
