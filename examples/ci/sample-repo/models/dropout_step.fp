# flashproof 0.1.0
# command: flashproof attention --sq 4 --sk 4 --d 2 --e 2 --mode train --dropout 0.1 -o models/dropout_step.fp
routine attention_train {
  attr seq_k = 4
  attr seq_q = 4
  node q : f32[1, 4, 1, 2] materialized input
  node k : f32[1, 4, 1, 2] materialized input
  node v : f32[1, 4, 1, 2] materialized input
  node dropout_u : f32[1, 4, 1, 4] materialized input
  node dout : f32[1, 4, 1, 2] materialized input
  node scores : f32[1, 4, 1, 4] materialized
  node scaled : f32[1, 4, 1, 4] materialized
  node row_max : f32[1, 4, 1] materialized
  node shifted : f32[1, 4, 1, 4] materialized
  node exps : f32[1, 4, 1, 4] materialized
  node row_sum : f32[1, 4, 1] materialized
  node probs : f32[1, 4, 1, 4] materialized
  node dropped : f32[1, 4, 1, 4] materialized
  node o : f32[1, 4, 1, 2] materialized
  node grad_dropped : f32[1, 4, 1, 4] materialized
  node grad_probs : f32[1, 4, 1, 4] materialized
  node grad_exps : f32[1, 4, 1, 4] materialized
  node grad_row_sum : f32[1, 4, 1] materialized
  node grad_shifted : f32[1, 4, 1, 4] materialized
  node grad_scaled : f32[1, 4, 1, 4] materialized
  node grad_scores : f32[1, 4, 1, 4] materialized
  node grad_q : f32[1, 4, 1, 2] materialized output
  node grad_k : f32[1, 4, 1, 2] materialized output
  node grad_v : f32[1, 4, 1, 2] materialized output
  zero scores
  for b in 0..0 {
    for s in 0..3 {
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
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          scaled[b, s, h, t] = mul.f32(scores[b, s, h, t], 0.7071067690849304:f32)
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        row_max[b, s, h] = -inf:f32
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          row_max[b, s, h] = max.f32(row_max[b, s, h], scaled[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          shifted[b, s, h, t] = sub.f32(scaled[b, s, h, t], row_max[b, s, h])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          exps[b, s, h, t] = exp.f32(shifted[b, s, h, t])
        }
      }
    }
  }
  zero row_sum
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          row_sum[b, s, h] = add.f32(row_sum[b, s, h], exps[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          probs[b, s, h, t] = div.f32(exps[b, s, h, t], row_sum[b, s, h])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          dropped[b, s, h, t] = div.f32(mul.f32(probs[b, s, h, t], lt.f32(0.10000000149011612:f32, dropout_u[b, s, h, t])), 0.8999999761581421:f32)
        }
      }
    }
  }
  zero o
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..3 {
            o[b, s, h, e] = add.f32(o[b, s, h, e], mul.f32(dropped[b, s, h, t], v[b, t, h, e]))
          }
        }
      }
    }
  }
  zero grad_dropped
  zero grad_probs
  zero grad_exps
  zero grad_row_sum
  zero grad_shifted
  zero grad_scaled
  zero grad_scores
  zero grad_q
  zero grad_k
  zero grad_v
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..3 {
            grad_dropped[b, s, h, t] = add.f32(grad_dropped[b, s, h, t], mul.f32(dout[b, s, h, e], v[b, t, h, e]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..3 {
            grad_v[b, t, h, e] = add.f32(grad_v[b, t, h, e], mul.f32(dropped[b, s, h, t], dout[b, s, h, e]))
          }
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          grad_probs[b, s, h, t] = add.f32(grad_probs[b, s, h, t], mul.f32(div.f32(grad_dropped[b, s, h, t], 0.8999999761581421:f32), lt.f32(0.10000000149011612:f32, dropout_u[b, s, h, t])))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          grad_exps[b, s, h, t] = add.f32(grad_exps[b, s, h, t], div.f32(grad_probs[b, s, h, t], row_sum[b, s, h]))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          grad_row_sum[b, s, h] = add.f32(grad_row_sum[b, s, h], mul.f32(grad_probs[b, s, h, t], div.f32(neg.f32(exps[b, s, h, t]), mul.f32(row_sum[b, s, h], row_sum[b, s, h]))))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          grad_exps[b, s, h, t] = add.f32(grad_exps[b, s, h, t], grad_row_sum[b, s, h])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          grad_shifted[b, s, h, t] = add.f32(grad_shifted[b, s, h, t], mul.f32(grad_exps[b, s, h, t], exps[b, s, h, t]))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          grad_scaled[b, s, h, t] = add.f32(grad_scaled[b, s, h, t], grad_shifted[b, s, h, t])
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for t in 0..3 {
          grad_scores[b, s, h, t] = add.f32(grad_scores[b, s, h, t], mul.f32(grad_scaled[b, s, h, t], 0.7071067690849304:f32))
        }
      }
    }
  }
  for b in 0..0 {
    for s in 0..3 {
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
    for s in 0..3 {
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
