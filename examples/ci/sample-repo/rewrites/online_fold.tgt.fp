# A hand-written FlashAttention-2 block fold of online_fold.src.fp (blocks of 2 keys), with a
# planted bug: the running sum's rescale is exp(m_next - m_prev), the exponent's sign flipped.
# The CI recipe's test expects this pair refuted (examples/ci/README.md).
# flashproof 0.1.0
routine attention_forward {
  attr seq_k = 4
  attr seq_q = 4
  node q : f32[1, 4, 1, 2] materialized input
  node k : f32[1, 4, 1, 2] materialized input
  node v : f32[1, 4, 1, 2] materialized input
  node o : f32[1, 4, 1, 2] materialized output
  node os_block_scores_scaled : f32[2, 1, 4, 1] materialized
  node os_block_numerator_o : f32[2, 1, 4, 1] materialized
  node os_block_rows_q : f32[2, 1, 4, 1] materialized
  for b in 0..0 {
    for s in 0..3 {
      for h in 0..0 {
        for os_d in 0..1 {
          os_block_rows_q[os_d, b, s, h] = q[b, s, h, os_d]
        }
        for os_e in 0..1 {
          os_block_numerator_o[os_e, b, s, h] = 0:f32
        }
        for os_key_t in 0..1 {
          os_block_scores_scaled[os_key_t, b, s, h] = 0:f32
        }
        scan os_block_t in 0..1 forward carry(os_m_prev_row_max -> os_m_next_row_max : f32 = -inf:f32, os_l_prev_row_sum -> os_l_next_row_sum : f32 = 0:f32) {
          for os_key_t in 0..1 {
            os_block_scores_scaled[os_key_t, b, s, h] = 0:f32
          }
          for os_key_t in 0..1 {
            for os_d in 0..1 {
              os_block_scores_scaled[os_key_t, b, s, h] = add.f32(os_block_scores_scaled[os_key_t, b, s, h], mul.f32(os_block_rows_q[os_d, b, s, h], k[b, 2*os_block_t + os_key_t, h, os_d]))
            }
          }
          for os_key_t in 0..1 {
            os_block_scores_scaled[os_key_t, b, s, h] = mul.f32(os_block_scores_scaled[os_key_t, b, s, h], 0.7071067690849304:f32)
          }
          local os_block_max_row_max : f32
          os_block_max_row_max := os_m_prev_row_max
          for os_key_t in 0..1 {
            os_block_max_row_max := max.f32(os_block_max_row_max, os_block_scores_scaled[os_key_t, b, s, h])
          }
          os_m_next_row_max := os_block_max_row_max
          local os_floor_row_max : f32
          os_floor_row_max := max.f32(os_m_next_row_max, -3.4028234663852886e+38:f32)
          local os_rescale_row_sum : f32
          os_rescale_row_sum := exp.f32(sub.f32(os_floor_row_max, max.f32(os_m_prev_row_max, -3.4028234663852886e+38:f32)))
          for os_key_t in 0..1 {
            os_block_scores_scaled[os_key_t, b, s, h] = exp.f32(sub.f32(os_block_scores_scaled[os_key_t, b, s, h], os_floor_row_max))
          }
          local os_block_sum_row_sum : f32
          os_block_sum_row_sum := 0:f32
          for os_key_t in 0..1 {
            os_block_sum_row_sum := add.f32(os_block_sum_row_sum, os_block_scores_scaled[os_key_t, b, s, h])
          }
          os_l_next_row_sum := add.f32(mul.f32(os_l_prev_row_sum, os_rescale_row_sum), os_block_sum_row_sum)
          local os_norm_row_sum : f32
          os_norm_row_sum := where.f32(eq.f32(os_m_next_row_max, -inf:f32), nan:f32, os_l_next_row_sum)
          for os_e in 0..1 {
            os_block_numerator_o[os_e, b, s, h] = mul.f32(os_block_numerator_o[os_e, b, s, h], os_rescale_row_sum)
          }
          for os_e in 0..1 {
            for os_key_t in 0..1 {
              os_block_numerator_o[os_e, b, s, h] = add.f32(os_block_numerator_o[os_e, b, s, h], mul.f32(os_block_scores_scaled[os_key_t, b, s, h], v[b, 2*os_block_t + os_key_t, h, os_e]))
            }
          }
          if eq.i32(idx.i32(os_block_t), 1:i32) {
            for os_e in 0..1 {
              o[b, s, h, os_e] = div.f32(os_block_numerator_o[os_e, b, s, h], os_norm_row_sum)
            }
          }
        }
      }
    }
  }
}
