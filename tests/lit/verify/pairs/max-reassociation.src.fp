# Source of the pair max-reassociation (see max-reassociation.tgt.fp for what is checked).
routine pair_max_reassociation_src {
  node a : f32[3] materialized input
  node o : f32[1] materialized output
  o[0] = max.f32(max.f32(a[0], a[1]), a[2])
}
