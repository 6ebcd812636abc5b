#!/usr/bin/env bash
# Slurm job array: each task tunes one deterministic shard of the sweep on its own GPU,
# then the last step merges the shards' journals and results into one set of tables.
#
#   sbatch --array=0-7 scripts/cluster/slurm-sweep.sh deepseek-v3 [--tokens 1-4096 ...]
#   (MOEBENCH: the binary; MOEBENCH_FAMILY: one family instead of all)
#   # after the array finishes:
#   moebench merge results/deepseek-v3/shard-* --out results/deepseek-v3/merged --tables configs
#
#SBATCH --job-name=moebench-sweep
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00
#SBATCH --output=moebench-%A_%a.log
set -euo pipefail
model=${1:?usage: sbatch --array=0-N slurm-sweep.sh MODEL [more sweep flags]}
shift
n=${SLURM_ARRAY_TASK_COUNT:?run as a job array}
i=${SLURM_ARRAY_TASK_ID:?run as a job array}
bin=${MOEBENCH:-build/bin/moebench}
out=results/$model/shard-$i-of-$n
# A requeued task (preemption, node failure) finds its shard's journal and continues it; the
# first run has none yet, and --resume would refuse to start without one.
resume=()
[ -f "$out/journal.jsonl" ] && resume=(--resume)
"$bin" sweep "${MOEBENCH_FAMILY:-all}" --model "$model" --shard "$i/$n" --out "$out" "${resume[@]}" --quiet "$@"
