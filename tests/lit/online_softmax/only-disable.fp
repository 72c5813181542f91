# --only and --disable select shapes by id; the hoist still needs the normalizer recognized, not rewritten.
# RUN: %flashproof rewrite %s --set online_softmax=true --disable online-softmax.value-pass-hoist | FileCheck %s --check-prefix=SCAN
# RUN: %flashproof rewrite %s --set online_softmax=true --only online-softmax.value-pass-hoist | FileCheck %s --check-prefix=HOIST
# RUN: %flashproof rewrite %s --set online_softmax=true --disable online-softmax --explain 2>&1 | FileCheck %s --check-prefix=NONE
# RUN: not %flashproof rewrite %s --only no-such-rewrite 2>&1 | FileCheck %s --check-prefix=BAD
# SCAN: scan j in 0..3 forward
# SCAN: o[i, k] = add.f32(o[i, k], mul.f32(p[i, j], v[j, k]))
# SCAN-NOT: local os_p_p
# HOIST: m[i] = max.f32(m[i], x[i, j])
# HOIST: zero l
# HOIST: os_p_p := p[i, j]
# HOIST-NOT: scan
# NONE: note: online-softmax: not selected (--only/--disable)
# NONE: l[r] = add.f32(l[r], e[r, c])
# BAD: --only: unknown rewrite 'no-such-rewrite' (known: online-softmax, online-softmax.normalizer-scan, online-softmax.value-pass-hoist, online-softmax.block-fold, online-softmax.fused-backward)

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
