# print writes the canonical form: the header comment, two-space indentation, canonical affine
# indices (merged terms, offset last) and shortest round-trip constants; a second print is a fixed point.
# RUN: %flashproof print %s | FileCheck %s
# RUN: %flashproof print %s -o %t.fp && %flashproof print %t.fp | grep -v '^#' > %t.again && grep -v '^#' %t.fp | diff - %t.again
# CHECK: # flashproof {{[0-9.]+}}
# CHECK-NEXT: # command: flashproof print
# CHECK: routine canon {
# CHECK: node x : f16[8] materialized input
# CHECK: for tb in 0..1 {
# CHECK-NEXT: for j in 0..3 {
# CHECK-NEXT: y[j + 4*tb] = mul.f16(x[4*tb + j], 0.1:f16)
# CHECK: scan t in 0..7 backward carry(p -> n : f32 = -inf:f32)
# CHECK-NEXT: n := max.f32(p, cast.f32(x[t]))
routine canon {
  node x : f16[8]   materialized input
  node y : f16[8] materialized output
  for tb in 0..1 { for j in 0..3 {
      y[j + 2*tb + 2*tb + 1 - 1] = mul.f16(x[4*tb + j], 0.1000:f16) } }
  scan t in 0..7 backward carry(p -> n : f32 = -inf:f32) { n := max.f32(p, cast.f32(x[t])) }
}
