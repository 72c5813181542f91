# The row statistics of a softmax over three scores: m = max x, l = sum exp(x - m).
# tests/package/ runs it on x = [1, 2, 3] through an installed flashproof.
routine softmax_row {
  node x : f32[3] materialized input
  node m : f32[1] materialized output
  node l : f32[1] materialized output
  m[0] = -inf:f32
  for t in 0..2 {
    m[0] = max.f32(m[0], x[t])
  }
  zero l
  for t in 0..2 {
    l[0] = add.f32(l[0], exp.f32(sub.f32(x[t], m[0])))
  }
}
