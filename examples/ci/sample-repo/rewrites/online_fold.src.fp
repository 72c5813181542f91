# flashproof 0.1.0
# command: flashproof attention --sq 4 --sk 4 --d 2 --e 2 -o rewrites/online_fold.src.fp
routine attention_forward {
  attr seq_k = 4
  attr seq_q = 4
  node q : f32[1, 4, 1, 2] materialized input
  node k : f32[1, 4, 1, 2] materialized input
  node v : f32[1, 4, 1, 2] materialized input
  node scores : f32[1, 4, 1, 4] materialized
  node scaled : f32[1, 4, 1, 4] materialized
  node row_max : f32[1, 4, 1] materialized
  node shifted : f32[1, 4, 1, 4] materialized
  node exps : f32[1, 4, 1, 4] materialized
  node row_sum : f32[1, 4, 1] materialized
  node probs : f32[1, 4, 1, 4] materialized
  node o : f32[1, 4, 1, 2] materialized output
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
  zero o
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for e in 0..1 {
          for t in 0..3 {
            o[b, s, h, e] = add.f32(o[b, s, h, e], mul.f32(probs[b, s, h, t], v[b, t, h, e]))
          }
        }
      }
    }
  }
}
