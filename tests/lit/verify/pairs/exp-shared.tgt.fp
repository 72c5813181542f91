# exp is uninterpreted but shared by both sides: swapping the operands of add is still proved, for every exp.
# VERIFY
# CLAIM: exact
# EXPECT: "exact"
routine pair_exp_shared_tgt {
  node a : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = add.f32(1:f32, exp.f32(a[i]))
  }
}
