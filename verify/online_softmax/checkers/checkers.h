#pragma once
// The online-softmax member's checkers (verify/online_softmax/proofs.h registers them), one file
// each in this folder:
//   all-sizes-lift.normalizer-scan      the scan's running max is the composed max, bit for bit, for
//                                       every extent (normalizer_max_lift.cpp)
//   all-sizes-lift.block-fold           the fold's running max is the composed max, bit for bit, for
//                                       every extent (block_fold_max_lift.cpp, fold_lift.h)
//   certified-bound.online-normalizer   the scan's l within its certified bound (online_normalizer_bound.cpp)
//   certified-bound.block-fold-sum      the fold's l within its certified bound (the same file)
//   certified-bound.block-fold-output   the fold's O within its certified bound (block_fold_output_bound.cpp)
//   certified-bound.fused-backward      the fused backward's dQ / dK within §8 (fused_backward_bound.cpp)
//   bitwise.fused-backward-dv           dV bitwise, its order for every size (fused_backward_order_check.cpp)

#include "verify/checkers.h"
#include "verify/size_reduction.h"

namespace fp::verify {

Checker normalizer_max_lift_checker();
Checker block_fold_max_lift_checker();
Checker online_normalizer_bound_checker();
Checker block_fold_sum_bound_checker();
Checker block_fold_output_bound_checker();
Checker fused_backward_bound_checker();
Checker fused_backward_dv_checker();

// The small instance of a fold task's family the fold's cross-checks run on: the tier's fold of a
// shrunk source in blocks of at most 3 (block_fold_max_lift.cpp); the emitter it uses; and the task
// at the instance, whose re-emission is that emitter (so a case written there shrinks only to what
// the tier emits).
ShrunkPair fold_instance(const Task& t, const Limits& limits);
EmitTarget fold_instance_emit(const Task& t);
Task fold_instance_task(const Task& t, const ShrunkPair& instance);

// The small instance of a fused-backward task the all-sizes claims of `gradient` are cross-checked
// on: the tier's fused backward of a shrunk source, when the target is what the tier emits and the
// lift (fused_backward_lift.h) covers the instance too; else the routine's own sizes
// (fused_backward_order_check.cpp).
ShrunkPair fused_backward_instance(const Task& t, const std::string& gradient);

}  // namespace fp::verify
