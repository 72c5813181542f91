# Shape 4, the block fold: with online_softmax_block=2 and 5 keys, the normalizer and its value pass
# become one scan per row over 3 key blocks of 2, the last one a guarded tail padded with -inf.
# The score chain (s, x), the row state (m, l) and the probabilities (n, e, p) are gone; the query
# row is copied once per row into a tile with the rows last (the contraction reads it from there).
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=2 | FileCheck %s
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=2 > %t.fold
# RUN: %flashproof rewrite %t.fold --set online_softmax=true --set online_softmax_block=2 | grep -v '^#' > %t.again
# RUN: grep -v '^#' %t.fold | diff - %t.again
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_block=2 --explain 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN
# The causal mask hides key 4 from row 0: its last block is skipped — `if` the block's first key is
# live the block is computed, else the state is updated in O(value cells) with the block's zero sum
# -0 + 0·v, computed once before the rows.
# CHECK-LABEL: routine attn
# CHECK-NOT: node s :
# CHECK-NOT: node p :
# CHECK: node os_block_scores_x : f32[2, 2] materialized
# CHECK-NEXT: node os_block_numerator_o : f32[2, 2] materialized
# CHECK-NEXT: node os_block_rows_q : f32[3, 2] materialized
# CHECK-NEXT: node os_block_zero_sum_o : f32[3, 2] materialized
# CHECK-NEXT: for os_block_t in 0..2 {
# CHECK-NEXT: for os_c in 0..1 {
# CHECK-NEXT: os_block_zero_sum_o[os_block_t, os_c] = -0:f32
# CHECK-NEXT: for os_key_t in 0..1 {
# CHECK-NEXT: if lt.i32(idx.i32(2*os_block_t + os_key_t), 5:i32) {
# CHECK-NEXT: os_block_zero_sum_o[os_block_t, os_c] = add.f32(os_block_zero_sum_o[os_block_t, os_c], mul.f32(0:f32, v[2*os_block_t + os_key_t, os_c]))
# CHECK: for i in 0..1 {
# CHECK-NEXT: for os_d in 0..2 {
# CHECK-NEXT: os_block_rows_q[os_d, i] = q[i, os_d]
# CHECK: scan os_block_t in 0..2 forward carry(os_m_prev_m -> os_m_next_m : f32 = -inf:f32, os_l_prev_l -> os_l_next_l : f32 = 0:f32) {
# CHECK: local os_block_next_l : f32
# CHECK-NEXT: if lt.i32(idx.i32(2*os_block_t), idx.i32(i + 4)) {
# CHECK-NEXT: for os_key_t in 0..1 {
# CHECK-NEXT: os_block_scores_x[os_key_t, i] = -inf:f32
# CHECK: if lt.i32(idx.i32(2*os_block_t + os_key_t), 5:i32) {
# CHECK-NEXT: os_block_scores_x[os_key_t, i] = 0:f32
# CHECK-NEXT: for os_d in 0..2 {
# CHECK-NEXT: os_block_scores_x[os_key_t, i] = add.f32(os_block_scores_x[os_key_t, i], mul.f32(os_block_rows_q[os_d, i], k[2*os_block_t + os_key_t, os_d]))
# CHECK: os_block_scores_x[os_key_t, i] = where.f32(lt.i32(idx.i32(2*os_block_t + os_key_t), idx.i32(i + 4)), mul.f32(os_block_scores_x[os_key_t, i], 0.5:f32), -inf:f32)
# CHECK: os_block_max_m := max.f32(os_block_max_m, os_block_scores_x[os_key_t, i])
# CHECK: os_rescale_l := exp.f32(sub.f32(max.f32(os_m_prev_m, -3.4028234663852886e+38:f32), os_floor_m))
# CHECK: os_block_scores_x[os_key_t, i] = exp.f32(sub.f32(os_block_scores_x[os_key_t, i], os_floor_m))
# CHECK: os_block_next_l := add.f32(mul.f32(os_l_prev_l, os_rescale_l), os_block_sum_l)
# CHECK: os_block_numerator_o[os_c, i] = mul.f32(os_block_numerator_o[os_c, i], os_rescale_l)
# CHECK: os_block_numerator_o[os_c, i] = add.f32(os_block_numerator_o[os_c, i], mul.f32(os_block_scores_x[os_key_t, i], v[2*os_block_t + os_key_t, os_c]))
# CHECK: if eq.i32(lt.i32(idx.i32(2*os_block_t), idx.i32(i + 4)), 0:i32) {
# CHECK-NEXT: os_block_max_m := os_m_prev_m
# CHECK-NEXT: os_floor_m := max.f32(os_block_max_m, -3.4028234663852886e+38:f32)
# CHECK-NEXT: os_rescale_l := exp.f32(sub.f32(max.f32(os_m_prev_m, -3.4028234663852886e+38:f32), os_floor_m))
# CHECK-NEXT: os_block_sum_l := add.f32(0:f32, exp.f32(sub.f32(-inf:f32, os_floor_m)))
# CHECK-NEXT: os_block_next_l := add.f32(mul.f32(os_l_prev_l, os_rescale_l), os_block_sum_l)
# CHECK-NEXT: for os_c in 0..1 {
# CHECK-NEXT: os_block_numerator_o[os_c, i] = add.f32(mul.f32(os_block_numerator_o[os_c, i], os_rescale_l), os_block_zero_sum_o[os_block_t, os_c])
# CHECK: os_m_next_m := os_block_max_m
# CHECK-NEXT: os_l_next_l := os_block_next_l
# CHECK: if eq.i32(idx.i32(os_block_t), 2:i32) {
# CHECK-NEXT: for os_c in 0..1 {
# CHECK-NEXT: o[i, os_c] = div.f32(os_block_numerator_o[os_c, i], os_norm_l)
# CHECK-NOT: m[i] = -inf:f32
# CHECK-NOT: zero o
# EXPLAIN: applied online-softmax.block-fold at statement 12
# EXPLAIN: emitted: one scan per row over 3 key blocks of 2 (a guarded tail padded with -inf), tiles os_block_scores_x and os_block_numerator_o; a block the -inf mask hides entirely is skipped
# EXPLAIN: claim bounded fold-output
# EXPLAIN: summary: 1 applied, 0 declined

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
