# Shape 4 with the row state read afterwards (m and p are outputs, as a training step's backward
# reads them): the fold stores m and l every block, and the definitions of n, e and p move behind
# the fold unchanged; the score chain stays (n reads x).
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=4 | FileCheck %s
# CHECK: scan os_block_t in 0..1 forward
# CHECK: m[i] = os_m_next_m
# CHECK-NEXT: l[i] = os_norm_l
# CHECK: o[i, os_c] = div.f32(os_block_numerator_o[os_c, i], os_norm_l)
# CHECK: n[i, t] = sub.f32(x[i, t], m[i])
# CHECK: e[i, t] = exp.f32(n[i, t])
# CHECK: p[i, t] = div.f32(e[i, t], l[i])
# CHECK-NOT: zero o

routine attn {
  node q : f32[2, 3] materialized input
  node k : f32[5, 3] materialized input
  node v : f32[5, 2] materialized input
  node s : f32[2, 5] materialized
  node x : f32[2, 5] materialized
  node m : f32[2] materialized output
  node n : f32[2, 5] materialized
  node e : f32[2, 5] materialized
  node l : f32[2] materialized
  node p : f32[2, 5] materialized output
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
  zero o
  for i in 0..1 {
    for c in 0..1 {
      for t in 0..4 {
        o[i, c] = add.f32(o[i, c], mul.f32(p[i, t], v[t, c]))
      }
    }
  }
}
