# Shape 3, the fused backward, on a causal training step (sq 3, sk 4, d = e = 2): the composed
# backward's seven [seq, seq] gradient nodes and their eighteen statements become the row dot D and
# three nests recomputing p, dp and ds per pair (golden: everything from the gradients' zero-outs on).
# With the block fold on as well, the step keeps no square buffer; a second rewrite changes nothing.
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_backward=true --only online-softmax.fused-backward | FileCheck %s
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_backward=true --only online-softmax.fused-backward --explain 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN
# RUN: %flashproof rewrite %s --set online_softmax=true --set online_softmax_backward=true --set online_softmax_block=2 -o %t.fold.fp
# RUN: %flashproof run %t.fold.fp --seed 1 --report-memory -q | FileCheck %s --check-prefix=MEM
# RUN: %flashproof rewrite %t.fold.fp --set online_softmax=true --set online_softmax_backward=true --set online_softmax_block=2 | grep -v '^#' > %t.again
# RUN: grep -v '^#' %t.fold.fp | diff - %t.again
# EXPLAIN: round 1: applied online-softmax.fused-backward at statement 24
# EXPLAIN: matched: x=masked p=probs o=o dO=dout dP=grad_probs dS=grad_scores dQ=grad_q dK=grad_k dV=grad_v
# EXPLAIN: claim exact backward-dv
# EXPLAIN: claim bounded backward-dq
# EXPLAIN: claim bounded backward-dk
# MEM-NOT: grad_probs
# MEM: os_bwd_rowdot_o
# MEM: (0 square)
# CHECK-NOT: grad_probs
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
# CHECK-NEXT: for bw_t in 0..3 {
# CHECK-NEXT: local bw_scores : f32
# CHECK-NEXT: bw_scores := 0:f32
# CHECK-NEXT: for bw_d in 0..1 {
# CHECK-NEXT: bw_scores := add.f32(bw_scores, mul.f32(q[bw_b, bw_s, bw_h, bw_d], k[bw_b, bw_t, bw_h, bw_d]))
# CHECK-NEXT: }
# CHECK-NEXT: local bw_scaled : f32
# CHECK-NEXT: bw_scaled := mul.f32(bw_scores, 0.7071067690849304:f32)
# CHECK-NEXT: local bw_masked : f32
# CHECK-NEXT: bw_masked := where.f32(lt.i32(idx.i32(bw_t), idx.i32(bw_s + 2)), bw_scaled, -inf:f32)
# CHECK-NEXT: local bw_shifted : f32
# CHECK-NEXT: bw_shifted := sub.f32(bw_masked, row_max[bw_b, bw_s, bw_h])
# CHECK-NEXT: local bw_exps : f32
# CHECK-NEXT: bw_exps := exp.f32(bw_shifted)
# CHECK-NEXT: local bw_probs : f32
# CHECK-NEXT: bw_probs := div.f32(bw_exps, row_sum[bw_b, bw_s, bw_h])
# CHECK-NEXT: local bw_dprob : f32
# CHECK-NEXT: bw_dprob := 0:f32
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: bw_dprob := add.f32(bw_dprob, mul.f32(dout[bw_b, bw_s, bw_h, bw_value_width], v[bw_b, bw_t, bw_h, bw_value_width]))
# CHECK-NEXT: }
# CHECK-NEXT: local bw_dscore : f32
# CHECK-NEXT: bw_dscore := mul.f32(bw_probs, sub.f32(bw_dprob, os_bwd_rowdot_o[bw_b, bw_s, bw_h]))
# CHECK-NEXT: bw_dscore := add.f32(0:f32, bw_dscore)
# CHECK-NEXT: bw_dscore := add.f32(0:f32, where.f32(lt.i32(idx.i32(bw_t), idx.i32(bw_s + 2)), bw_dscore, 0:f32))
# CHECK-NEXT: bw_dscore := add.f32(0:f32, mul.f32(bw_dscore, 0.7071067690849304:f32))
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: grad_q[bw_b, bw_s, bw_h, bw_head_width] = add.f32(grad_q[bw_b, bw_s, bw_h, bw_head_width], mul.f32(bw_dscore, k[bw_b, bw_t, bw_h, bw_head_width]))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_b in 0..0 {
# CHECK-NEXT: for bw_t in 0..3 {
# CHECK-NEXT: for bw_h in 0..0 {
# CHECK-NEXT: for bw_s in 0..2 {
# CHECK-NEXT: local bw_scores_2 : f32
# CHECK-NEXT: bw_scores_2 := 0:f32
# CHECK-NEXT: for bw_d_2 in 0..1 {
# CHECK-NEXT: bw_scores_2 := add.f32(bw_scores_2, mul.f32(q[bw_b, bw_s, bw_h, bw_d_2], k[bw_b, bw_t, bw_h, bw_d_2]))
# CHECK-NEXT: }
# CHECK-NEXT: local bw_scaled_2 : f32
# CHECK-NEXT: bw_scaled_2 := mul.f32(bw_scores_2, 0.7071067690849304:f32)
# CHECK-NEXT: local bw_masked_2 : f32
# CHECK-NEXT: bw_masked_2 := where.f32(lt.i32(idx.i32(bw_t), idx.i32(bw_s + 2)), bw_scaled_2, -inf:f32)
# CHECK-NEXT: local bw_shifted_2 : f32
# CHECK-NEXT: bw_shifted_2 := sub.f32(bw_masked_2, row_max[bw_b, bw_s, bw_h])
# CHECK-NEXT: local bw_exps_2 : f32
# CHECK-NEXT: bw_exps_2 := exp.f32(bw_shifted_2)
# CHECK-NEXT: local bw_probs_2 : f32
# CHECK-NEXT: bw_probs_2 := div.f32(bw_exps_2, row_sum[bw_b, bw_s, bw_h])
# CHECK-NEXT: local bw_dprob_2 : f32
# CHECK-NEXT: bw_dprob_2 := 0:f32
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: bw_dprob_2 := add.f32(bw_dprob_2, mul.f32(dout[bw_b, bw_s, bw_h, bw_value_width], v[bw_b, bw_t, bw_h, bw_value_width]))
# CHECK-NEXT: }
# CHECK-NEXT: local bw_dscore_2 : f32
# CHECK-NEXT: bw_dscore_2 := mul.f32(bw_probs_2, sub.f32(bw_dprob_2, os_bwd_rowdot_o[bw_b, bw_s, bw_h]))
# CHECK-NEXT: bw_dscore_2 := add.f32(0:f32, bw_dscore_2)
# CHECK-NEXT: bw_dscore_2 := add.f32(0:f32, where.f32(lt.i32(idx.i32(bw_t), idx.i32(bw_s + 2)), bw_dscore_2, 0:f32))
# CHECK-NEXT: bw_dscore_2 := add.f32(0:f32, mul.f32(bw_dscore_2, 0.7071067690849304:f32))
# CHECK-NEXT: for bw_head_width in 0..1 {
# CHECK-NEXT: grad_k[bw_b, bw_t, bw_h, bw_head_width] = add.f32(grad_k[bw_b, bw_t, bw_h, bw_head_width], mul.f32(q[bw_b, bw_s, bw_h, bw_head_width], bw_dscore_2))
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: for bw_b in 0..0 {
# CHECK-NEXT: for bw_t in 0..3 {
# CHECK-NEXT: for bw_h in 0..0 {
# CHECK-NEXT: for bw_s in 0..2 {
# CHECK-NEXT: local bw_scores_3 : f32
# CHECK-NEXT: bw_scores_3 := 0:f32
# CHECK-NEXT: for bw_d_3 in 0..1 {
# CHECK-NEXT: bw_scores_3 := add.f32(bw_scores_3, mul.f32(q[bw_b, bw_s, bw_h, bw_d_3], k[bw_b, bw_t, bw_h, bw_d_3]))
# CHECK-NEXT: }
# CHECK-NEXT: local bw_scaled_3 : f32
# CHECK-NEXT: bw_scaled_3 := mul.f32(bw_scores_3, 0.7071067690849304:f32)
# CHECK-NEXT: local bw_masked_3 : f32
# CHECK-NEXT: bw_masked_3 := where.f32(lt.i32(idx.i32(bw_t), idx.i32(bw_s + 2)), bw_scaled_3, -inf:f32)
# CHECK-NEXT: local bw_shifted_3 : f32
# CHECK-NEXT: bw_shifted_3 := sub.f32(bw_masked_3, row_max[bw_b, bw_s, bw_h])
# CHECK-NEXT: local bw_exps_3 : f32
# CHECK-NEXT: bw_exps_3 := exp.f32(bw_shifted_3)
# CHECK-NEXT: local bw_probs_3 : f32
# CHECK-NEXT: bw_probs_3 := div.f32(bw_exps_3, row_sum[bw_b, bw_s, bw_h])
# CHECK-NEXT: for bw_value_width in 0..1 {
# CHECK-NEXT: grad_v[bw_b, bw_t, bw_h, bw_value_width] = add.f32(grad_v[bw_b, bw_t, bw_h, bw_value_width], mul.f32(bw_probs_3, dout[bw_b, bw_s, bw_h, bw_value_width]))
# CHECK-NEXT: }
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
