# Source of the pair sum-order (see sum-order.tgt.fp for what is checked).
routine pair_sum_order_src {
  node a : f32[3] materialized input
  node o : f32[1] materialized output
  zero o
  for i in 0..2 {
    o[0] = add.f32(o[0], a[i])
  }
}
