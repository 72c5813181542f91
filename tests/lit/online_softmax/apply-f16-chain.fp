# An f16 chain is carried in f32 state (floored at the f32 lowest finite value) and stored back at f16.
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# CHECK: scan j in 0..3 forward carry(os_m_prev_m -> os_m_next_m : f32 = -inf:f32, os_l_prev_l -> os_l_next_l : f32 = 0:f32) {
# CHECK-NEXT: local os_x_x : f32
# CHECK-NEXT: os_x_x := x[i, j]
# CHECK: max.f32(os_m_next_m, -3.4028234663852886e+38:f32)
# CHECK: l[i] = where.f32(eq.f32(os_m_next_m, -inf:f32), nan:f32, os_l_next_l)
# CHECK: local os_p_p : f16

routine softmax {
  node x : f16[2, 4] materialized input
  node v : f16[4, 3] materialized input
  node m : f16[2] materialized output
  node n : f16[2, 4] materialized
  node e : f16[2, 4] materialized
  node l : f16[2] materialized output
  node p : f16[2, 4] materialized
  node o : f16[2, 3] materialized output
  for i in 0..1 {
    m[i] = -inf:f16
  }
  for i in 0..1 {
    for j in 0..3 {
      m[i] = max.f16(m[i], x[i, j])
    }
  }
  for a in 0..1 {
    for b in 0..3 {
      n[a, b] = sub.f16(x[a, b], m[a])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      e[i, j] = exp.f16(n[i, j])
    }
  }
  zero l
  for r in 0..1 {
    for c in 0..3 {
      l[r] = add.f16(l[r], e[r, c])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      p[i, j] = div.f16(e[i, j], l[i])
    }
  }
  zero o
  for i in 0..1 {
    for k in 0..2 {
      for j in 0..3 {
        o[i, k] = add.f16(o[i, k], mul.f16(p[i, j], v[j, k]))
      }
    }
  }
}
