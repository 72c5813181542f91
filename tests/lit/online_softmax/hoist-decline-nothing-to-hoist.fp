# When p is indexed by every loop of the reduction there is no loop to move; the hoist declines.
# RUN: %flashproof rewrite %s --set online_softmax=true --explain 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# EXPLAIN: applied online-softmax.normalizer-scan
# EXPLAIN: declined online-softmax.value-pass-hoist at statement {{[0-9]+}} {{.*}}[nothing-to-hoist]
# CHECK: scan j in 0..3 forward
# CHECK: o[i] = add.f32(o[i], mul.f32(p[i, j], v[i, j]))
# CHECK-NOT: local os_p_p

routine softmax {
  node x : f32[2, 4] materialized input
  node v : f32[2, 4] materialized input
  node m : f32[2] materialized output
  node n : f32[2, 4] materialized
  node e : f32[2, 4] materialized
  node l : f32[2] materialized output
  node p : f32[2, 4] materialized
  node o : f32[2] materialized output
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
    for j in 0..3 {
      o[i] = add.f32(o[i], mul.f32(p[i, j], v[i, j]))
    }
  }
}
