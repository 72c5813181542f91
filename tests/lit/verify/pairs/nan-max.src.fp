# Source of the pair nan-max (see nan-max.tgt.fp for what is checked).
routine pair_nan_max_src {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = max.f32(a[i], b[i])
  }
}
