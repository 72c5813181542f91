# A softmax with its shift written inline, exp(x - m): the normalizer scan declines it
# [no-sum-chain] (the CI recipe test adds it to the sample repository as a new regression).
routine softmax_inline {
  node x : f32[2, 4] materialized input
  node m : f32[2] materialized
  node e : f32[2, 4] materialized
  node l : f32[2] materialized
  node p : f32[2, 4] materialized output
  for i in 0..1 {
    m[i] = -inf:f32
  }
  for i in 0..1 {
    for j in 0..3 {
      m[i] = max.f32(m[i], x[i, j])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      e[i, j] = exp.f32(sub.f32(x[i, j], m[i]))
    }
  }
  zero l
  for i in 0..1 {
    for j in 0..3 {
      l[i] = add.f32(l[i], e[i, j])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      p[i, j] = div.f32(e[i, j], l[i])
    }
  }
}
