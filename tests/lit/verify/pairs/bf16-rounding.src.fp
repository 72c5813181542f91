# Source of the pair bf16-rounding (see bf16-rounding.tgt.fp for what is checked).
routine pair_bf16_rounding_src {
  node a : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = a[i]
  }
}
