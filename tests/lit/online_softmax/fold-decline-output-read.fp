# Shape 4 declines when a statement reads O between its zero-out and the value pass; the normalizer keeps the two-pass form
# (shapes 1-2): the rewrite with a block size is the rewrite without one.
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=2 --explain 2>&1 >/dev/null | FileCheck %s
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=2 | grep -v '^#' > %t.block
# RUN: %flashproof rewrite %s --set online_softmax=true | grep -v '^#' > %t.twopass
# RUN: diff %t.block %t.twopass
# CHECK: declined online-softmax.block-fold at statement {{[0-9]+}} {{.*}}[output-read]:

routine fold_decline {
  node q : f32[3, 2] materialized input
  node k : f32[5, 2] materialized input
  node v : f32[5, 4] materialized input
  node s : f32[3, 5] materialized
  node m : f32[3] materialized
  node n : f32[3, 5] materialized
  node e : f32[3, 5] materialized
  node l : f32[3] materialized
  node p : f32[3, 5] materialized
  
  node o : f32[3, 4] materialized output
  node g : f32[3] materialized output
  zero s
  for i in 0..2 { for t in 0..4 { for d in 0..1 { s[i, t] = add.f32(s[i, t], mul.f32(q[i, d], k[t, d])) } } }
  for i in 0..2 { m[i] = -inf:f32 }
  for i in 0..2 { for t in 0..4 { m[i] = max.f32(m[i], s[i, t]) } }
  for i in 0..2 { for t in 0..4 { n[i, t] = sub.f32(s[i, t], m[i]) } }
  for i in 0..2 { for t in 0..4 { e[i, t] = exp.f32(n[i, t]) } }
  zero l
  for i in 0..2 { for t in 0..4 { l[i] = add.f32(l[i], e[i, t]) } }
  for i in 0..2 { for t in 0..4 { p[i, t] = div.f32(e[i, t], l[i]) } }
  
  zero o
  for i in 0..2 { g[i] = o[i, 0] }
  for i in 0..2 { for c in 0..3 { for t in 0..4 { o[i, c] = add.f32(o[i, c], mul.f32(p[i, t], v[t, c])) } } }
}
