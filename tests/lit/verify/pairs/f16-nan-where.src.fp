# Source of the pair f16-nan-where (see f16-nan-where.tgt.fp for what is checked).
routine pair_f16_nan_where_src {
  node a : f16[2] materialized input
  node o : f16[2] materialized output
  for i in 0..1 {
    o[i] = mul.f16(a[i], 2:f16)
  }
}
