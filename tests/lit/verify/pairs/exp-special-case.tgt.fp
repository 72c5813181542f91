# A special case that is right for the real exp (exp.f32(1) = 2.71828175) but not for every exp: only the
# approximation separates the two, so the verdict is unknown, never refuted and never proved.
# EXPECT: "unknown (approximation in the way)"
routine pair_exp_special_case_tgt {
  node a : f32[2] materialized input
  node o : f32[2] materialized output
  for i in 0..1 {
    o[i] = where.f32(eq.f32(a[i], 1:f32), 2.7182817459106445:f32, exp.f32(a[i]))
  }
}
