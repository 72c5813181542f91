# Source of the pair exp-shared (see exp-shared.tgt.fp for what is checked).
routine pair_exp_shared_src {
  node a : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = add.f32(exp.f32(a[i]), 1:f32)
  }
}
