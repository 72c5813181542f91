# --explain prints each application with its matched nodes, emitted statements and one obligation per claim.
# RUN: %flashproof rewrite %s --set online_softmax=true --explain 2>&1 >/dev/null | FileCheck %s
# CHECK: round 1: applied online-softmax.normalizer-scan at statement 2 (line {{[0-9]+}})
# CHECK-NEXT: matched: x=x m=m n=n e=e l=l rows=i reduced=j
# CHECK-NEXT: statements: 2 (line {{[0-9]+}}), 1 (line {{[0-9]+}}), 3 (line {{[0-9]+}}), 4 (line {{[0-9]+}}), 5 (line {{[0-9]+}}), 6 (line {{[0-9]+}})
# CHECK-NEXT: emitted: for i: scan j in 0..3 carrying (os_m_prev_m -> os_m_next_m, os_l_prev_l -> os_l_next_l) at f32
# CHECK-NEXT: claim exact normalizer-max: m equals the composed max of x over j bitwise
# CHECK-NEXT: covers: m[i] for i in 0..1
# CHECK-NEXT: claim bounded normalizer-sum: l is the composed sum of exp(x - m) over j within rounding
# CHECK-NEXT: covers: l[i] for i in 0..1
# CHECK-NEXT: bound terms: 4 terms, storage f32, state f32
# CHECK-NEXT: round 1: applied online-softmax.value-pass-hoist at statement 9 (line {{[0-9]+}})
# CHECK-NEXT: matched: target=o w=p v=v
# CHECK-NEXT: statements: 9
# CHECK-NEXT: emitted: for i, j: read p once into local os_p_p, then loop k innermost
# CHECK-NEXT: claim exact value-pass: every cell of o is bitwise equal to the original
# CHECK-NEXT: covers: o[i, k] for i in 0..1, k in 0..2
# CHECK-NEXT: summary: 2 applied, 0 declined, 2 rounds

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
