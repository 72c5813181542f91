# The probabilities reach the value pass through several elementwise steps (scale, dropout, copy); factor and operand order are kept.
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# CHECK: ps[i, j] = mul.f32(p[i, j], 0.5:f32)
# CHECK: pc[i, j] = pd[i, j]
# CHECK: for i in 0..1 {
# CHECK-NEXT: for j in 0..3 {
# CHECK-NEXT: local os_p_pc : f32
# CHECK-NEXT: os_p_pc := pc[i, j]
# CHECK-NEXT: for k in 0..2 {
# CHECK-NEXT: o[i, k] = add.f32(mul.f32(v[j, k], os_p_pc), o[i, k])

routine softmax {
  node x : f32[2, 4] materialized input
  node v : f32[4, 3] materialized input
  node m : f32[2] materialized output
  node n : f32[2, 4] materialized
  node e : f32[2, 4] materialized
  node l : f32[2] materialized output
  node p : f32[2, 4] materialized
  node o : f32[2, 3] materialized output
  node u : f32[2, 4] materialized input
  node ps : f32[2, 4] materialized
  node pd : f32[2, 4] materialized
  node pc : f32[2, 4] materialized
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
  for i in 0..1 {
    for j in 0..3 {
      ps[i, j] = mul.f32(p[i, j], 0.5:f32)
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      pd[i, j] = where.f32(lt.f32(u[i, j], 0.25:f32), 0:f32, div.f32(ps[i, j], 0.75:f32))
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      pc[i, j] = pd[i, j]
    }
  }
  zero o
  for i in 0..1 {
    for k in 0..2 {
      for j in 0..3 {
        o[i, k] = add.f32(mul.f32(v[j, k], pc[i, j]), o[i, k])
      }
    }
  }
}
