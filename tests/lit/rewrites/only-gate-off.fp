# --only selects among enabled rewrites, it never turns a gate on: naming a member or shape whose
# gate is off warns which key to set (the routine comes out unchanged, exit 0). An --only id that
# does not exist is a usage error listing the real ones.
# RUN: %flashproof rewrite %s --only online-softmax.normalizer-scan 2>&1 > %t.out | FileCheck %s --check-prefix=WARN
# WARN: flashproof: warning: --only online-softmax.normalizer-scan: the gate online_softmax of online-softmax is off, so nothing will apply (--only selects among enabled rewrites); turn it on with --set online_softmax=true
# RUN: FileCheck %s --check-prefix=UNCHANGED < %t.out
# UNCHANGED: zero l
# UNCHANGED-NOT: scan
# RUN: %flashproof rewrite %s --only online-softmax 2>&1 >/dev/null | FileCheck %s --check-prefix=MEMBER
# MEMBER: warning: --only online-softmax: the gate online_softmax of online-softmax is off
# With the gate on there is nothing to warn about.
# RUN: %flashproof rewrite %s --set online_softmax=true --only online-softmax.normalizer-scan 2>&1 >/dev/null | FileCheck %s --allow-empty --check-prefix=QUIET
# QUIET-NOT: warning
# RUN: not %flashproof rewrite %s --only online-softmax.no-such-shape 2>&1 | FileCheck %s --check-prefix=UNKNOWN
# UNKNOWN: flashproof: error: --only: unknown rewrite 'online-softmax.no-such-shape' (known: online-softmax, online-softmax.normalizer-scan, online-softmax.value-pass-hoist, online-softmax.block-fold, online-softmax.fused-backward)
# RUN: not %flashproof verify %s --only online-softmax.no-such-shape 2>&1 | FileCheck %s --check-prefix=UNKNOWN

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
