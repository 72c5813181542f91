# flashproof 0.1.0
# command: flashproof attention --sq 2 --sk 2 --d 2 --e 2 --mode train --mask prefix:1
routine attention_train {
  attr seq_k = 2
  attr seq_q = 2
  node q : f32[1, 2, 1, 2] materialized input
  node k : f32[1, 2, 1, 2] materialized input
  node v : f32[1, 2, 1, 2] materialized input
  node dout : f32[1, 2, 1, 2] materialized input
  node scores : f32[1, 2, 1, 2] materialized
  node scaled : f32[1, 2, 1, 2] materialized
  node masked : f32[1, 2, 1, 2] materialized
  node row_max : f32[1, 2, 1] materialized
  node shifted : f32[1, 2, 1, 2] materialized
  node exps : f32[1, 2, 1, 2] materialized
  node row_sum : f32[1, 2, 1] materialized
  node probs : f32[1, 2, 1, 2] materialized
  node o : f32[1, 2, 1, 2] materialized
  node grad_probs : f32[1, 2, 1, 2] materialized
  node grad_exps : f32[1, 2, 1, 2] materialized
  node grad_row_sum : f32[1, 2, 1] materialized
  node grad_shifted : f32[1, 2, 1, 2] materialized
  node grad_masked : f32[1, 2, 1, 2] materialized
  node grad_scaled : f32[1, 2, 1, 2] materialized
  node grad_scores : f32[1, 2, 1, 2] materialized
  node grad_q : f32[1, 2, 1, 2] materialized output
  node grad_k : f32[1, 2, 1, 2] materialized output
  node grad_v : f32[1, 2, 1, 2] materialized output
  zero scores
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          for d in 0..1 {
            scores[b, s, h, t] = add.f32(scores[b, s, h, t], mul.f32(q[b, s, h, d], k[b, t, h, d]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          scaled[b, s, h, t] = mul.f32(scores[b, s, h, t], 0.7071067690849304:f32)
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          masked[b, s, h, t] = where.f32(max.i32(lt.i32(idx.i32(t), 1:i32), lt.i32(idx.i32(t), idx.i32(s + 1))), scaled[b, s, h, t], -inf:f32)
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        row_max[b, s, h] = -inf:f32
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          row_max[b, s, h] = max.f32(row_max[b, s, h], masked[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          shifted[b, s, h, t] = sub.f32(masked[b, s, h, t], row_max[b, s, h])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          exps[b, s, h, t] = exp.f32(shifted[b, s, h, t])
        }
      }
    }
  }
  zero row_sum
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          row_sum[b, s, h] = add.f32(row_sum[b, s, h], exps[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          probs[b, s, h, t] = div.f32(exps[b, s, h, t], row_sum[b, s, h])
        }
      }
    }
  }
  zero o
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..1 {
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
    for s in 0..1 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..1 {
            grad_probs[b, s, h, t] = add.f32(grad_probs[b, s, h, t], mul.f32(dout[b, s, h, e], v[b, t, h, e]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..1 {
            grad_v[b, t, h, e] = add.f32(grad_v[b, t, h, e], mul.f32(probs[b, s, h, t], dout[b, s, h, e]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          grad_exps[b, s, h, t] = add.f32(grad_exps[b, s, h, t], div.f32(grad_probs[b, s, h, t], row_sum[b, s, h]))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          grad_row_sum[b, s, h] = add.f32(grad_row_sum[b, s, h], mul.f32(grad_probs[b, s, h, t], div.f32(neg.f32(exps[b, s, h, t]), mul.f32(row_sum[b, s, h], row_sum[b, s, h]))))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          grad_exps[b, s, h, t] = add.f32(grad_exps[b, s, h, t], grad_row_sum[b, s, h])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          grad_shifted[b, s, h, t] = add.f32(grad_shifted[b, s, h, t], mul.f32(grad_exps[b, s, h, t], exps[b, s, h, t]))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          grad_masked[b, s, h, t] = add.f32(grad_masked[b, s, h, t], grad_shifted[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          grad_scaled[b, s, h, t] = add.f32(grad_scaled[b, s, h, t], where.f32(max.i32(lt.i32(idx.i32(t), 1:i32), lt.i32(idx.i32(t), idx.i32(s + 1))), grad_masked[b, s, h, t], 0:f32))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          grad_scores[b, s, h, t] = add.f32(grad_scores[b, s, h, t], mul.f32(grad_scaled[b, s, h, t], 0.7071067690849304:f32))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          for d in 0..1 {
            grad_q[b, s, h, d] = add.f32(grad_q[b, s, h, d], mul.f32(grad_scores[b, s, h, t], k[b, t, h, d]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..1 {
      for h in 0..0 {
        for t in 0..1 {
          for d in 0..1 {
            grad_k[b, t, h, d] = add.f32(grad_k[b, t, h, d], mul.f32(q[b, s, h, d], grad_scores[b, s, h, t]))
          }
        }
      }
    }
  }
}
