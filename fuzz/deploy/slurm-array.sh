#!/usr/bin/env bash
# A sharded `flashproof fuzz rewrite` campaign as a Slurm job array: one array task per shard
# (docs/fuzzing.md, "Sharding"). Submit from a folder on a file system every node sees:
#
#   JOBID=$(sbatch --parsable fuzz/deploy/slurm-array.sh)
#   sbatch --dependency=afterany:$JOBID --job-name=flashproof-fuzz-merge \
#          --output=fuzz-out/logs/merge-%j.log \
#          --wrap='flashproof fuzz merge fuzz-out/merged fuzz-out/shard-*'
#
# afterany (not afterok): a shard that found something exits 1, and its findings must be merged too.
# flashproof reads the shard from Slurm: --shard-index = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN,
# --shard-count = SLURM_ARRAY_TASK_COUNT, so --array=0-7 gives shards 0..7 of 8 (and --array=8-15
# would too). Shard i of 8 draws the global case indices g = n*8 + i: no two shards repeat a case,
# and the same -seed reproduces all of them. Resubmitting the array resumes every shard from its
# corpus (the state file .fuzz-state-<target>-<seed>-<stream>-of-<streams>.json holds its next execution index).
#
#SBATCH --job-name=flashproof-fuzz-rewrite
#SBATCH --array=0-7
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=01:10:00
#SBATCH --output=fuzz-out/logs/shard-%a-%A.log
# (%A: the array's job id, %a: the task id. Slurm does not create the logs folder: make it before
# submitting, `mkdir -p fuzz-out/logs`. --time leaves ten minutes past -max_total_time for the last
# case, the final statistics and the writes.)
set -euo pipefail

# The program (default: flashproof on PATH) and where the shards write: the same path on every node
# (a shared file system).
flashproof="${FLASHPROOF:-flashproof}"
out="${FLASHPROOF_FUZZ_OUT:-fuzz-out}"
shard="$out/shard-${SLURM_ARRAY_TASK_ID:?run this script with sbatch --array}"
mkdir -p "$shard/corpus" "$shard/findings"

# The flags are libFuzzer's: one hour, seed 1 for every shard (each shard draws its own disjoint
# stream from it), findings under the shard's own folder, final statistics. srun makes the step
# visible to sacct/sstat; exec hands the task's signals (scancel, the time limit) to flashproof.
# Exit 1 means findings: the array task is then marked FAILED, which is what a dashboard should show.
exec srun --ntasks=1 --cpus-per-task="${SLURM_CPUS_PER_TASK:-1}" \
  "$flashproof" fuzz rewrite "$shard/corpus" \
  -max_total_time=3600 -seed=1 \
  -artifact_prefix="$shard/findings/" \
  -print_final_stats=1
