# max reassociates bit for bit (it returns an operand or NaN).
# VERIFY
# CLAIM: exact
# EXPECT: "exact"
routine pair_max_reassociation_tgt {
  node a : f32[3] materialized input
  node o : f32[1] materialized output
  o[0] = max.f32(a[0], max.f32(a[1], a[2]))
}
