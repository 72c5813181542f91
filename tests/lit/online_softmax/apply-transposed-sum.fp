# The reduced loop need not be innermost and l may store the rows transposed: the scan runs innermost over the max's rows in their order and stores l through the rows' roles.
# RUN: %flashproof rewrite %s --set online_softmax=true | FileCheck %s
# CHECK: for u in 0..2 {
# CHECK-NEXT: for w in 0..1 {
# CHECK-NEXT: scan t in 0..3 forward
# CHECK: os_x_x := x[u, w, t]
# CHECK: m[u, w] = os_m_next_m
# CHECK-NEXT: l[w, u] = where.f32

routine softmax {
  node x : f32[3, 2, 4] materialized input
  node v : f32[4, 3] materialized input
  node m : f32[3, 2] materialized output
  node n : f32[3, 2, 4] materialized
  node e : f32[3, 2, 4] materialized
  node l : f32[2, 3] materialized output
  node p : f32[3, 2, 4] materialized
  node o : f32[3, 2, 3] materialized output
  for u in 0..2 {
    for w in 0..1 {
      m[u, w] = -inf:f32
    }
  }
  for u in 0..2 {
    for t in 0..3 {
      for w in 0..1 {
        m[u, w] = max.f32(m[u, w], x[u, w, t])
      }
    }
  }
  for a in 0..2 {
    for b in 0..1 {
      for c in 0..3 {
        n[a, b, c] = sub.f32(x[a, b, c], m[a, b])
      }
    }
  }
  for a in 0..2 {
    for b in 0..1 {
      for c in 0..3 {
        e[a, b, c] = exp.f32(n[a, b, c])
      }
    }
  }
  zero l
  for g in 0..1 {
    for f in 0..2 {
      for c in 0..3 {
        l[g, f] = add.f32(l[g, f], e[f, g, c])
      }
    }
  }
  for a in 0..2 {
    for b in 0..1 {
      for c in 0..3 {
        p[a, b, c] = div.f32(e[a, b, c], l[b, a])
      }
    }
  }
  zero o
  for a in 0..2 {
    for b in 0..1 {
      for k in 0..2 {
        for c in 0..3 {
          o[a, b, k] = add.f32(o[a, b, k], mul.f32(p[a, b, c], v[c, k]))
        }
      }
    }
  }
}
