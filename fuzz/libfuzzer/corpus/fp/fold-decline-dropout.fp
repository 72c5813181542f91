# Shape 4 declines on a value pass that reads the probabilities through a dropout-like step (pd = p·2):
# the fold computes p·v from e / l itself. The normalizer keeps the two-pass form (shapes 1-2).
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=2 --explain 2>&1 >/dev/null | FileCheck %s
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=2 | grep -v '^#' > %t.block
# RUN: %flashproof rewrite %s --set online_softmax=true | grep -v '^#' > %t.twopass
# RUN: diff %t.block %t.twopass
# CHECK: applied online-softmax.normalizer-scan at statement 5
# CHECK: declined online-softmax.block-fold at statement 5 {{.*}}[value-pass-not-direct]: the value pass of the normalizer of x reads probabilities that are not e / l directly

routine attn {
  node q : f32[2, 3] materialized input
  node k : f32[5, 3] materialized input
  node v : f32[5, 2] materialized input
  node s : f32[2, 5] materialized
  node x : f32[2, 5] materialized
  node m : f32[2] materialized
  node n : f32[2, 5] materialized
  node e : f32[2, 5] materialized
  node l : f32[2] materialized
  node p : f32[2, 5] materialized
  node pd : f32[2, 5] materialized
  node o : f32[2, 2] materialized output
  zero s
  for i in 0..1 {
    for t in 0..4 {
      for d in 0..2 {
        s[i, t] = add.f32(s[i, t], mul.f32(q[i, d], k[t, d]))
      }
    }
  }
  for i in 0..1 {
    for t in 0..4 {
      x[i, t] = where.f32(lt.i32(idx.i32(t), idx.i32(i + 4)), mul.f32(s[i, t], 0.5:f32), -inf:f32)
    }
  }
  for i in 0..1 {
    m[i] = -inf:f32
  }
  for i in 0..1 {
    for t in 0..4 {
      m[i] = max.f32(m[i], x[i, t])
    }
  }
  for i in 0..1 {
    for t in 0..4 {
      n[i, t] = sub.f32(x[i, t], m[i])
    }
  }
  for i in 0..1 {
    for t in 0..4 {
      e[i, t] = exp.f32(n[i, t])
    }
  }
  zero l
  for i in 0..1 {
    for t in 0..4 {
      l[i] = add.f32(l[i], e[i, t])
    }
  }
  for i in 0..1 {
    for t in 0..4 {
      p[i, t] = div.f32(e[i, t], l[i])
    }
  }
  for i in 0..1 {
    for t in 0..4 {
      pd[i, t] = mul.f32(p[i, t], 2:f32)
    }
  }
  zero o
  for i in 0..1 {
    for c in 0..1 {
      for t in 0..4 {
        o[i, c] = add.f32(o[i, c], mul.f32(pd[i, t], v[t, c]))
      }
    }
  }
}
