# max is commutative bit for bit, NaN and signed zeros included (IEEE 754-2019 maximum).
# VERIFY
# CLAIM: exact
# EXPECT: "exact"
routine pair_max_commutes_tgt {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = max.f32(b[i], a[i])
  }
}
