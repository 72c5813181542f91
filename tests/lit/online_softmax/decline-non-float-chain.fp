# An integer chain (m, l, x, n, e all i32; exp is float-only, so it rounds into e) truncates per step; the rewrite declines.
# RUN: %flashproof rewrite %s --set online_softmax=true --explain 2>&1 >/dev/null | FileCheck %s
# RUN: %flashproof rewrite %s --set online_softmax=true | grep -v '^#' > %t.on
# RUN: %flashproof rewrite %s | grep -v '^#' > %t.off
# RUN: diff %t.on %t.off
# CHECK: declined online-softmax.normalizer-scan at statement {{[0-9]+}} {{.*}}[non-float-chain]
# CHECK: summary: 0 applied

routine softmax {
  node x : i32[2, 4] materialized input
  node v : i32[4, 3] materialized input
  node m : i32[2] materialized output
  node n : i32[2, 4] materialized
  node e : i32[2, 4] materialized
  node l : i32[2] materialized output
  node p : i32[2, 4] materialized
  node o : i32[2, 3] materialized output
  for i in 0..1 {
    m[i] = -2147483648:i32
  }
  for i in 0..1 {
    for j in 0..3 {
      m[i] = max.i32(m[i], x[i, j])
    }
  }
  for a in 0..1 {
    for b in 0..3 {
      n[a, b] = sub.i32(x[a, b], m[a])
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
      l[r] = add.i32(l[r], e[r, c])
    }
  }
  for i in 0..1 {
    for j in 0..3 {
      p[i, j] = div.i32(e[i, j], l[i])
    }
  }
  zero o
  for i in 0..1 {
    for k in 0..2 {
      for j in 0..3 {
        o[i, k] = add.i32(o[i, k], mul.i32(p[i, j], v[j, k]))
      }
    }
  }
}
