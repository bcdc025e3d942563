#!/usr/bin/env bash
# coll10b (issue 24): 4-GPU channel sweep of NCCL's ring all-gather / reduce-scatter / all-reduce at 1 GiB,
# NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = C for C in 8 16 32, and NCCL's default (its INFO log
# names the channels it chose). Predictions written first: scripts/gpu/coll10b_predictions.json. NVLink multicast off.
set -u -o pipefail
O=${1:?out}; W=$O/coll10b; mkdir -p "$W"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1,2,3}
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv; } > "$W/machine.txt" 2>&1
run() {  # label, timeout, then VAR=value ...
  local lab=$1 to=$2; shift 2
  env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$W/nccl_$lab.%p.txt" timeout "$to" \
    torchrun --standalone --nproc_per_node=4 inplace_collectives.py --out "$W/inplace_$lab.json" --reps 2 \
    --min-pow ${MINP:-30} --max-pow ${MAXP:-30} --label "$lab $*" > "$W/log_$lab.txt" 2>&1
  echo "rc=$?" >> "$W/log_$lab.txt"; echo "== $lab $*"; tail -6 "$W/log_$lab.txt"
}
run default 60 NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING
for c in 8 16 32; do
  run ch$c 90 NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c
done
# keep rank 0's and rank 1's INFO logs short: drop the per-call lines, count them
for f in "$W"/nccl_*.txt; do
  [ -f "$f" ] || continue
  n=$(grep -c "NCCL INFO AllGather\|NCCL INFO ReduceScatter\|NCCL INFO AllReduce" "$f" || true)
  grep -v "NCCL INFO AllGather:\|NCCL INFO ReduceScatter:\|NCCL INFO AllReduce:" "$f" > "$f.tmp"; echo "per-call lines dropped: $n" >> "$f.tmp"; mv "$f.tmp" "$f"
done
date -u >> "$W/machine.txt"
tar -C "$O" -czf "$O/coll10b.tgz" coll10b && rm -rf "$W"
