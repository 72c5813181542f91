# Source of the pair max-commutes (see max-commutes.tgt.fp for what is checked).
routine pair_max_commutes_src {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = max.f32(a[i], b[i])
  }
}
