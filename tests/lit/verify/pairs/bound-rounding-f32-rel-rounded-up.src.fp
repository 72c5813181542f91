# Source of the pair bound-rounding-f32-rel-rounded-up (see bound-rounding-f32-rel-rounded-up.tgt.fp for what is checked).
routine pair_bound_rounding_f32_rel_rounded_up_src {
  node a : f32[1] materialized input
  node o : f32[1] materialized output
  o[0] = a[0]
}
