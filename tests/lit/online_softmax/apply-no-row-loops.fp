# A normalizer with no row loops (m and l single cells at a fixed index) is one scan at top level; regression: the sum's target once failed the role check when the max had no rows.
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# CHECK: scan t in 0..2 forward carry(os_m_prev_m -> os_m_next_m : f32 = -inf:f32, os_l_prev_l -> os_l_next_l : f32 = 0:f32) {
# CHECK: os_x_x := x[t]
# CHECK: m[0] = os_m_next_m
# CHECK-NEXT: l[0] = where.f32
# CHECK-NOT: zero l

routine r {
  node x : f32[3] materialized input
  node m : f32[1] materialized output
  node n : f32[3] materialized
  node e : f32[3] materialized
  node l : f32[1] materialized output
  m[0] = -inf:f32
  for t in 0..2 {
    m[0] = max.f32(m[0], x[t])
  }
  for t in 0..2 {
    n[t] = sub.f32(x[t], m[0])
  }
  for t in 0..2 {
    e[t] = exp.f32(n[t])
  }
  zero l
  for t in 0..2 {
    l[0] = add.f32(l[0], e[t])
  }
}
