# Fixed indices on unit axes take part in signatures: m[i, 0] and l[0, r] still match, and zero l covers exactly the sum's cells.
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# CHECK: scan j in 0..3 forward
# CHECK: m[i, 0] = os_m_next_m
# CHECK-NEXT: l[0, i] = where.f32
# CHECK-NOT: zero l

routine softmax {
  node x : f32[2, 4] materialized input
  node v : f32[4, 3] materialized input
  node m : f32[2, 1] materialized output
  node n : f32[2, 4] materialized
  node e : f32[2, 4] materialized
  node l : f32[1, 2] materialized output
  node p : f32[2, 4] materialized
  node o : f32[2, 3] materialized output
  for i in 0..1 {
    m[i, 0] = -inf:f32
  }
  for i in 0..1 {
    for j in 0..3 {
      m[i, 0] = max.f32(m[i, 0], x[i, j])
    }
  }
  for a in 0..1 {
    for b in 0..3 {
      n[a, b] = sub.f32(x[a, b], m[a, 0])
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
      l[0, r] = add.f32(l[0, r], e[r, c])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      p[i, j] = div.f32(e[i, j], l[0, i])
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
