# rewrite writes the file header (version, command) and the rewritten routine to -o; the output parses and checks.
# RUN: %flashproof rewrite %s --set online_softmax=true -o %t.fp
# RUN: FileCheck %s < %t.fp
# RUN: %flashproof rewrite %t.fp --set online_softmax=true --explain 2>&1 >/dev/null | FileCheck %s --check-prefix=AGAIN
# CHECK: # flashproof {{[0-9]+\.[0-9]+\.[0-9]+}}
# CHECK-NEXT: # command: flashproof rewrite {{.*}}rewrite-output.fp --set online_softmax=true -o
# CHECK: scan t in 0..2 forward
# AGAIN: summary: 0 applied, 0 declined, 1 round

routine r {
  node x : f32[3] materialized input
  node m : f32[1] materialized output
  node n : f32[3] materialized
  node e : f32[3] materialized
  node l : f32[1] materialized output
  m[0] = -inf:f32
  for t in 0..2 {
    m[0] = max.f32(m[0], x[t])
  }
  for t in 0..2 {
    n[t] = sub.f32(x[t], m[0])
  }
  for t in 0..2 {
    e[t] = exp.f32(n[t])
  }
  zero l
  for t in 0..2 {
    l[0] = add.f32(l[0], e[t])
  }
}
