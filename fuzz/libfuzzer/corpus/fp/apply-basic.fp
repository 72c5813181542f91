# The composed softmax (max, x - m, exp, sum) becomes one scan per row; the value pass reads p once.
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# CHECK-LABEL: routine softmax
# CHECK-NOT: m[i] = -inf:f32
# CHECK: for i in 0..1 {
# CHECK-NEXT: scan j in 0..3 forward carry(os_m_prev_m -> os_m_next_m : f32 = -inf:f32, os_l_prev_l -> os_l_next_l : f32 = 0:f32) {
# CHECK-NEXT: local os_x_x : f32
# CHECK-NEXT: os_x_x := x[i, j]
# CHECK-NEXT: os_m_next_m := max.f32(os_m_prev_m, os_x_x)
# CHECK-NEXT: os_l_next_l := add.f32(mul.f32(os_l_prev_l, exp.f32(sub.f32(max.f32(os_m_prev_m, -3.4028234663852886e+38:f32), max.f32(os_m_next_m, -3.4028234663852886e+38:f32)))), exp.f32(sub.f32(os_x_x, max.f32(os_m_next_m, -3.4028234663852886e+38:f32))))
# CHECK-NEXT: m[i] = os_m_next_m
# CHECK-NEXT: l[i] = where.f32(eq.f32(os_m_next_m, -inf:f32), nan:f32, os_l_next_l)
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK: n[a, b] = sub.f32(x[a, b], m[a])
# CHECK: e[i, j] = exp.f32(n[i, j])
# CHECK-NOT: zero l
# CHECK-NOT: l[r] = add.f32(l[r], e[r, c])
# CHECK: p[i, j] = div.f32(e[i, j], l[i])
# CHECK: zero o
# CHECK-NEXT: for i in 0..1 {
# CHECK-NEXT: for j in 0..3 {
# CHECK-NEXT: local os_p_p : f32
# CHECK-NEXT: os_p_p := p[i, j]
# CHECK-NEXT: for k in 0..2 {
# CHECK-NEXT: o[i, k] = add.f32(o[i, k], mul.f32(os_p_p, v[j, k]))

routine softmax {
  node x : f32[2, 4] materialized input
  node v : f32[4, 3] materialized input
  node m : f32[2] materialized output
  node n : f32[2, 4] materialized
  node e : f32[2, 4] materialized
  node l : f32[2] materialized output
  node p : f32[2, 4] materialized
  node o : f32[2, 3] materialized output
  for i in 0..1 {
    m[i] = -inf:f32
  }
  for i in 0..1 {
    for j in 0..3 {
      m[i] = max.f32(m[i], x[i, j])
    }
  }
  for a in 0..1 {
    for b in 0..3 {
      n[a, b] = sub.f32(x[a, b], m[a])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      e[i, j] = exp.f32(n[i, j])
    }
  }
  zero l
  for r in 0..1 {
    for c in 0..3 {
      l[r] = add.f32(l[r], e[r, c])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      p[i, j] = div.f32(e[i, j], l[i])
    }
  }
  zero o
  for i in 0..1 {
    for k in 0..2 {
      for j in 0..3 {
        o[i, k] = add.f32(o[i, k], mul.f32(p[i, j], v[j, k]))
      }
    }
  }
}
