# An f64 chain keeps f64 state, floored at the f64 lowest finite value (not -inf, not f32's).
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# CHECK: scan j in 0..3 forward carry(os_m_prev_m -> os_m_next_m : f64 = -inf:f64, os_l_prev_l -> os_l_next_l : f64 = 0:f64) {
# CHECK: max.f64(os_m_prev_m, -1.7976931348623157e+308:f64)
# CHECK: l[i] = where.f64(eq.f64(os_m_next_m, -inf:f64), nan:f64, os_l_next_l)

routine softmax {
  node x : f64[2, 4] materialized input
  node v : f64[4, 3] materialized input
  node m : f64[2] materialized output
  node n : f64[2, 4] materialized
  node e : f64[2, 4] materialized
  node l : f64[2] materialized output
  node p : f64[2, 4] materialized
  node o : f64[2, 3] materialized output
  for i in 0..1 {
    m[i] = -inf:f64
  }
  for i in 0..1 {
    for j in 0..3 {
      m[i] = max.f64(m[i], x[i, j])
    }
  }
  for a in 0..1 {
    for b in 0..3 {
      n[a, b] = sub.f64(x[a, b], m[a])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      e[i, j] = exp.f64(n[i, j])
    }
  }
  zero l
  for r in 0..1 {
    for c in 0..3 {
      l[r] = add.f64(l[r], e[r, c])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      p[i, j] = div.f64(e[i, j], l[i])
    }
  }
  zero o
  for i in 0..1 {
    for k in 0..2 {
      for j in 0..3 {
        o[i, k] = add.f64(o[i, k], mul.f64(p[i, j], v[j, k]))
      }
    }
  }
}
