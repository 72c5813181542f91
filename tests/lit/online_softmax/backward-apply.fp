# Shape 3, the fused backward, on a causal training step (sq 3, sk 4, d = e = 2): the composed
# backward's seven [seq, seq] gradient nodes and their eighteen statements become the row dot D and
# three nests recomputing p, dp and ds per pair, in blocks over the pair's other axis with tiles (golden:
# the minted nodes, and everything from the gradients' zero-outs on).
# With the block fold on as well, the step keeps no square buffer; a second rewrite changes nothing.
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_backward=true --only online-softmax.fused-backward | FileCheck %s
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_backward=true --only online-softmax.fused-backward --explain 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_backward=true --set online_softmax_block=2 -o %t.fold.fp
# (At 3 x 4 a block of 64 holds every key: the tiles are as large as a square buffer. The memory
# report is checked at 80 x 80, where they are not.)
# RUN: %flashproof attention --sq 80 --sk 80 --d 4 --e 4 --mask causal --mode train -o %t.big.fp
# RUN: %flashproof rewrite %t.big.fp --set online_softmax=true --set online_softmax_backward=true --set online_softmax_block=16 -o %t.bigfold.fp
# RUN: %flashproof run %t.bigfold.fp --seed 1 --report-memory -q | FileCheck %s --check-prefix=MEM
# RUN: %flashproof rewrite %t.fold.fp --set online_softmax=true --set online_softmax_backward=true --set online_softmax_block=2 | grep -v '^#' > %t.again
# RUN: grep -v '^#' %t.fold.fp | diff - %t.again
# EXPLAIN: round 1: applied online-softmax.fused-backward at statement 24
# EXPLAIN: matched: x=masked p=probs o=o v=v dO=dout dP=grad_probs dS=grad_scores q=q k=k dQ=grad_q dK=grad_k dV=grad_v
# EXPLAIN: emitted: the row dot D = Σ dout·o into os_bwd_rowdot_o, and three nests recomputing p, dp and ds per (query, key) pair in blocks of up to 64 over the pair's other axis, in tiles: over the query rows into grad_q, over the keys into grad_k and grad_v; a block the mask hides entirely skips its score and dp contractions; 7 intermediates and 18 statements consumed
# EXPLAIN: claim exact backward-dv
# EXPLAIN: claim bounded backward-dq
# EXPLAIN: claim bounded backward-dk
# MEM-NOT: grad_probs
# MEM: os_bwd_rowdot_o
# MEM: (0 square)
# CHECK-NOT: grad_probs
# CHECK: node os_bwd_rowdot_o : f32[1, 3, 1] materialized
# CHECK: node os_bwd_probs_dq : f32[4, 1, 3, 1] materialized
# CHECK: node os_bwd_dprob_dq : f32[4, 1, 3, 1] materialized
# CHECK: node os_bwd_grad_dq : f32[2, 1, 3, 1] materialized
# CHECK: node os_bwd_rows_q_dq : f32[2, 1, 3, 1] materialized
# CHECK: node os_bwd_rows_dout_dq : f32[2, 1, 3, 1] materialized
# CHECK: node os_bwd_probs_dk : f32[3, 1, 4, 1] materialized
# CHECK: node os_bwd_dprob_dk : f32[3, 1, 4, 1] materialized
# CHECK: node os_bwd_grad_dk : f32[2, 1, 4, 1] materialized
# CHECK: node os_bwd_rows_k_dk : f32[2, 1, 4, 1] materialized
# CHECK: node os_bwd_rows_v_dk : f32[2, 1, 4, 1] materialized
# CHECK: node os_bwd_probs_dv : f32[3, 1, 4, 1] materialized
# CHECK: node os_bwd_grad_dv : f32[2, 1, 4, 1] materialized
# CHECK: node os_bwd_rows_k_dv : f32[2, 1, 4, 1] materialized
# CHECK: zero grad_q
# CHECK-NEXT: zero grad_k
# CHECK-NEXT: zero grad_v
# CHECK-NEXT: for bw_b in 0..0 {
# CHECK-NEXT: for bw_s in 0..2 {
# CHECK-NEXT: for bw_h in 0..0 {
# CHECK-NEXT: local bw_rowdot_acc : f32
# CHECK-NEXT: bw_rowdot_acc := 0:f32
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: bw_rowdot_acc := add.f32(bw_rowdot_acc, mul.f32(dout[bw_b, bw_s, bw_h, bw_value_width], o[bw_b, bw_s, bw_h, bw_value_width]))
# CHECK-NEXT: }
# CHECK-NEXT: os_bwd_rowdot_o[bw_b, bw_s, bw_h] = bw_rowdot_acc
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_b in 0..0 {
# CHECK-NEXT: for bw_s in 0..2 {
# CHECK-NEXT: for bw_h in 0..0 {
# CHECK-NEXT: for bw_d in 0..1 {
# CHECK-NEXT: os_bwd_rows_q_dq[bw_d, bw_b, bw_s, bw_h] = q[bw_b, bw_s, bw_h, bw_d]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: os_bwd_rows_dout_dq[bw_value_width, bw_b, bw_s, bw_h] = dout[bw_b, bw_s, bw_h, bw_value_width]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: os_bwd_grad_dq[bw_head_width, bw_b, bw_s, bw_h] = grad_q[bw_b, bw_s, bw_h, bw_head_width]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_block in 0..0 {
# CHECK-NEXT: if lt.i32(idx.i32(4*bw_block), idx.i32(bw_s + 2)) {
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h] = 0:f32
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: for bw_d in 0..1 {
# CHECK-NEXT: os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h] = add.f32(os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h], mul.f32(os_bwd_rows_q_dq[bw_d, bw_b, bw_s, bw_h], k[bw_b, 4*bw_block + bw_j, bw_h, bw_d]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h] = mul.f32(os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h], 0.7071067690849304:f32)
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h] = where.f32(lt.i32(idx.i32(4*bw_block + bw_j), idx.i32(bw_s + 2)), os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h], -inf:f32)
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h] = sub.f32(os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h], row_max[bw_b, bw_s, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h] = exp.f32(os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h] = div.f32(os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h], row_sum[bw_b, bw_s, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: if lt.i32(idx.i32(4*bw_block), idx.i32(bw_s + 2)) {
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h] = 0:f32
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h] = add.f32(os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h], mul.f32(os_bwd_rows_dout_dq[bw_value_width, bw_b, bw_s, bw_h], v[bw_b, 4*bw_block + bw_j, bw_h, bw_value_width]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h] = mul.f32(os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h], sub.f32(os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h], os_bwd_rowdot_o[bw_b, bw_s, bw_h]))
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h] = add.f32(0:f32, os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h] = add.f32(0:f32, where.f32(lt.i32(idx.i32(4*bw_block + bw_j), idx.i32(bw_s + 2)), os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h], 0:f32))
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h] = add.f32(0:f32, mul.f32(os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h], 0.7071067690849304:f32))
# CHECK-NEXT: }
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: for bw_j in 0..3 {
# CHECK-NEXT: os_bwd_grad_dq[bw_head_width, bw_b, bw_s, bw_h] = add.f32(os_bwd_grad_dq[bw_head_width, bw_b, bw_s, bw_h], mul.f32(os_bwd_dprob_dq[bw_j, bw_b, bw_s, bw_h], k[bw_b, 4*bw_block + bw_j, bw_h, bw_head_width]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: grad_q[bw_b, bw_s, bw_h, bw_head_width] = os_bwd_grad_dq[bw_head_width, bw_b, bw_s, bw_h]
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_b in 0..0 {
# CHECK-NEXT: for bw_t in 0..3 {
# CHECK-NEXT: for bw_h in 0..0 {
# CHECK-NEXT: for bw_d_2 in 0..1 {
# CHECK-NEXT: os_bwd_rows_k_dk[bw_d_2, bw_b, bw_t, bw_h] = k[bw_b, bw_t, bw_h, bw_d_2]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: os_bwd_rows_v_dk[bw_value_width, bw_b, bw_t, bw_h] = v[bw_b, bw_t, bw_h, bw_value_width]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: os_bwd_grad_dk[bw_head_width, bw_b, bw_t, bw_h] = grad_k[bw_b, bw_t, bw_h, bw_head_width]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_block_2 in 0..0 {
# CHECK-NEXT: if lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_2 + 4)) {
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h] = 0:f32
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: for bw_d_2 in 0..1 {
# CHECK-NEXT: os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h] = add.f32(os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h], mul.f32(q[bw_b, 3*bw_block_2 + bw_j_2, bw_h, bw_d_2], os_bwd_rows_k_dk[bw_d_2, bw_b, bw_t, bw_h]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h] = mul.f32(os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h], 0.7071067690849304:f32)
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h] = where.f32(lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_2 + bw_j_2 + 2)), os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h], -inf:f32)
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h] = sub.f32(os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h], row_max[bw_b, 3*bw_block_2 + bw_j_2, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h] = exp.f32(os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h] = div.f32(os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h], row_sum[bw_b, 3*bw_block_2 + bw_j_2, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: if lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_2 + 4)) {
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h] = 0:f32
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h] = add.f32(os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h], mul.f32(dout[bw_b, 3*bw_block_2 + bw_j_2, bw_h, bw_value_width], os_bwd_rows_v_dk[bw_value_width, bw_b, bw_t, bw_h]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h] = mul.f32(os_bwd_probs_dk[bw_j_2, bw_b, bw_t, bw_h], sub.f32(os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h], os_bwd_rowdot_o[bw_b, 3*bw_block_2 + bw_j_2, bw_h]))
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h] = add.f32(0:f32, os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h] = add.f32(0:f32, where.f32(lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_2 + bw_j_2 + 2)), os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h], 0:f32))
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h] = add.f32(0:f32, mul.f32(os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h], 0.7071067690849304:f32))
# CHECK-NEXT: }
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: for bw_j_2 in 0..2 {
# CHECK-NEXT: os_bwd_grad_dk[bw_head_width, bw_b, bw_t, bw_h] = add.f32(os_bwd_grad_dk[bw_head_width, bw_b, bw_t, bw_h], mul.f32(q[bw_b, 3*bw_block_2 + bw_j_2, bw_h, bw_head_width], os_bwd_dprob_dk[bw_j_2, bw_b, bw_t, bw_h]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: grad_k[bw_b, bw_t, bw_h, bw_head_width] = os_bwd_grad_dk[bw_head_width, bw_b, bw_t, bw_h]
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_b in 0..0 {
# CHECK-NEXT: for bw_t in 0..3 {
# CHECK-NEXT: for bw_h in 0..0 {
# CHECK-NEXT: for bw_d_3 in 0..1 {
# CHECK-NEXT: os_bwd_rows_k_dv[bw_d_3, bw_b, bw_t, bw_h] = k[bw_b, bw_t, bw_h, bw_d_3]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: os_bwd_grad_dv[bw_value_width, bw_b, bw_t, bw_h] = grad_v[bw_b, bw_t, bw_h, bw_value_width]
# CHECK-NEXT: }
# CHECK-NEXT: for bw_block_3 in 0..0 {
# CHECK-NEXT: if lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_3 + 4)) {
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h] = 0:f32
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: for bw_d_3 in 0..1 {
# CHECK-NEXT: os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h] = add.f32(os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h], mul.f32(q[bw_b, 3*bw_block_3 + bw_j_3, bw_h, bw_d_3], os_bwd_rows_k_dv[bw_d_3, bw_b, bw_t, bw_h]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h] = mul.f32(os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h], 0.7071067690849304:f32)
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h] = where.f32(lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_3 + bw_j_3 + 2)), os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h], -inf:f32)
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h] = sub.f32(os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h], row_max[bw_b, 3*bw_block_3 + bw_j_3, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h] = exp.f32(os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h] = div.f32(os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h], row_sum[bw_b, 3*bw_block_3 + bw_j_3, bw_h])
# CHECK-NEXT: }
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: for bw_j_3 in 0..2 {
# CHECK-NEXT: os_bwd_grad_dv[bw_value_width, bw_b, bw_t, bw_h] = add.f32(os_bwd_grad_dv[bw_value_width, bw_b, bw_t, bw_h], mul.f32(os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h], dout[bw_b, 3*bw_block_3 + bw_j_3, bw_h, bw_value_width]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: grad_v[bw_b, bw_t, bw_h, bw_value_width] = os_bwd_grad_dv[bw_value_width, bw_b, bw_t, bw_h]
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
routine attention_train {
  attr seq_k = 4
  attr seq_q = 3
  node q : f32[1, 3, 1, 2] materialized input
  node k : f32[1, 4, 1, 2] materialized input
  node v : f32[1, 4, 1, 2] materialized input
  node dout : f32[1, 3, 1, 2] materialized input
  node scores : f32[1, 3, 1, 4] materialized
  node scaled : f32[1, 3, 1, 4] materialized
  node masked : f32[1, 3, 1, 4] materialized
  node row_max : f32[1, 3, 1] materialized
  node shifted : f32[1, 3, 1, 4] materialized
  node exps : f32[1, 3, 1, 4] materialized
  node row_sum : f32[1, 3, 1] materialized
  node probs : f32[1, 3, 1, 4] materialized
  node o : f32[1, 3, 1, 2] materialized
  node grad_probs : f32[1, 3, 1, 4] materialized
  node grad_exps : f32[1, 3, 1, 4] materialized
  node grad_row_sum : f32[1, 3, 1] materialized
  node grad_shifted : f32[1, 3, 1, 4] materialized
  node grad_masked : f32[1, 3, 1, 4] materialized
  node grad_scaled : f32[1, 3, 1, 4] materialized
  node grad_scores : f32[1, 3, 1, 4] materialized
  node grad_q : f32[1, 3, 1, 2] materialized output
  node grad_k : f32[1, 4, 1, 2] materialized output
  node grad_v : f32[1, 4, 1, 2] materialized output
  zero scores
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          for d in 0..1 {
            scores[b, s, h, t] = add.f32(scores[b, s, h, t], mul.f32(q[b, s, h, d], k[b, t, h, d]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          scaled[b, s, h, t] = mul.f32(scores[b, s, h, t], 0.7071067690849304:f32)
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          masked[b, s, h, t] = where.f32(lt.i32(idx.i32(t), idx.i32(s + 2)), scaled[b, s, h, t], -inf:f32)
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        row_max[b, s, h] = -inf:f32
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          row_max[b, s, h] = max.f32(row_max[b, s, h], masked[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          shifted[b, s, h, t] = sub.f32(masked[b, s, h, t], row_max[b, s, h])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          exps[b, s, h, t] = exp.f32(shifted[b, s, h, t])
        }
      }
    }
  }
  zero row_sum
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          row_sum[b, s, h] = add.f32(row_sum[b, s, h], exps[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          probs[b, s, h, t] = div.f32(exps[b, s, h, t], row_sum[b, s, h])
        }
      }
    }
  }
  zero o
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..3 {
            o[b, s, h, e] = add.f32(o[b, s, h, e], mul.f32(probs[b, s, h, t], v[b, t, h, e]))
          }
        }
      }
    }
  }
  zero grad_probs
  zero grad_exps
  zero grad_row_sum
  zero grad_shifted
  zero grad_masked
  zero grad_scaled
  zero grad_scores
  zero grad_q
  zero grad_k
  zero grad_v
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..3 {
            grad_probs[b, s, h, t] = add.f32(grad_probs[b, s, h, t], mul.f32(dout[b, s, h, e], v[b, t, h, e]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..3 {
            grad_v[b, t, h, e] = add.f32(grad_v[b, t, h, e], mul.f32(probs[b, s, h, t], dout[b, s, h, e]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          grad_exps[b, s, h, t] = add.f32(grad_exps[b, s, h, t], div.f32(grad_probs[b, s, h, t], row_sum[b, s, h]))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          grad_row_sum[b, s, h] = add.f32(grad_row_sum[b, s, h], mul.f32(grad_probs[b, s, h, t], div.f32(neg.f32(exps[b, s, h, t]), mul.f32(row_sum[b, s, h], row_sum[b, s, h]))))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          grad_exps[b, s, h, t] = add.f32(grad_exps[b, s, h, t], grad_row_sum[b, s, h])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          grad_shifted[b, s, h, t] = add.f32(grad_shifted[b, s, h, t], mul.f32(grad_exps[b, s, h, t], exps[b, s, h, t]))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          grad_masked[b, s, h, t] = add.f32(grad_masked[b, s, h, t], grad_shifted[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          grad_scaled[b, s, h, t] = add.f32(grad_scaled[b, s, h, t], where.f32(lt.i32(idx.i32(t), idx.i32(s + 2)), grad_masked[b, s, h, t], 0:f32))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          grad_scores[b, s, h, t] = add.f32(grad_scores[b, s, h, t], mul.f32(grad_scaled[b, s, h, t], 0.7071067690849304:f32))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          for d in 0..1 {
            grad_q[b, s, h, d] = add.f32(grad_q[b, s, h, d], mul.f32(grad_scores[b, s, h, t], k[b, t, h, d]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..2 {
      for h in 0..0 {
        for t in 0..3 {
          for d in 0..1 {
            grad_k[b, t, h, d] = add.f32(grad_k[b, t, h, d], mul.f32(q[b, s, h, d], grad_scores[b, s, h, t]))
          }
        }
      }
    }
  }
}
