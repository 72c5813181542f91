# Source of the pair bound-rounding-negative-difference (see bound-rounding-negative-difference.tgt.fp for what is checked).
routine pair_bound_rounding_negative_difference_src {
  node a : f32[1] materialized input
  node o : f32[1] materialized output
  o[0] = a[0]
}
