/* The CPU side of gpu_exp32_agreement.cu: core/numerics_c.h's fpc_exp32 compiled by the host C
 * compiler with the C executor's semantics flags (-ffp-contract=off, no fast-math), over a range of
 * f32 bit patterns, in parallel (OpenMP). */
#include "core/numerics_c.h"

void fp_host_exp32_bits(fpc_u32 first, fpc_u32 count, fpc_u32* out) {
  long i;
#pragma omp parallel for schedule(static)
  for (i = 0; i < (long)count; ++i) out[i] = fpc_bits_of_f32(fpc_exp32(fpc_f32_from_bits(first + (fpc_u32)i)));
}
