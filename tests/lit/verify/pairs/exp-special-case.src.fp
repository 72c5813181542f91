# Source of the pair exp-special-case (see exp-special-case.tgt.fp for what is checked).
routine pair_exp_special_case_src {
  node a : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = exp.f32(a[i])
  }
}
