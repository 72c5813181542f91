# Source of the pair negative-zero-bounded (see negative-zero-bounded.tgt.fp for what is checked).
routine pair_negative_zero_bounded_src {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = add.f32(a[i], 0:f32)
  }
}
