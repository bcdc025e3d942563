#!/usr/bin/env bash
# coll9b (issue 24): the same 2-GPU in-place / out-of-place sweep at 256 MiB - 1 GiB under NCCL settings that could
# set the 2-GPU ring all-gather's pace (protocol, buffer size, channels, threads, P2P read), NVLink multicast off.
set -u -o pipefail
O=${1:?out}; W=$O/coll9b; mkdir -p "$W"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_VISIBLE_DEVICES=0,1
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } > "$W/machine.txt" 2>&1
run() {  # label, then VAR=value ...
  local lab=$1; shift
  env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING NCCL_DEBUG_FILE="$W/nccl_$lab.%p.txt" timeout 60 \
    torchrun --standalone --nproc_per_node=2 inplace_collectives.py --out "$W/inplace_$lab.json" --reps 2 \
    --min-pow ${MINP:-28} --max-pow ${MAXP:-30} --label "$lab $*" > "$W/log_$lab.txt" 2>&1
  echo "rc=$?" >> "$W/log_$lab.txt"; echo "== $lab $*"; tail -7 "$W/log_$lab.txt" | grep -v "^summary"
}
run default NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING
run simple NCCL_PROTO=Simple
run ll128 NCCL_PROTO=LL128
run buff16m NCCL_BUFFSIZE=16777216
run ch32 NCCL_MIN_NCHANNELS=32 NCCL_MAX_NCHANNELS=32
run ch8 NCCL_MIN_NCHANNELS=8 NCCL_MAX_NCHANNELS=8
run p2pread NCCL_P2P_READ_ENABLE=1
run thr256 NCCL_NTHREADS=256
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$NGPU" -ge 4 ]; then  # the whole first sweep over 4 GPUs (predictions for n=4 are in coll9_predictions.json)
  CUDA_VISIBLE_DEVICES=0,1,2,3 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE="$W/nccl_n4.%p.txt" \
    timeout 90 torchrun --standalone --nproc_per_node=4 inplace_collectives.py --out "$W/inplace_n4.json" --reps 2 \
    --label n4 > "$W/log_n4.txt" 2>&1
  echo "rc=$?" >> "$W/log_n4.txt"; echo "== n4"; tail -7 "$W/log_n4.txt"
fi
date -u >> "$W/machine.txt"
tar -C "$O" -czf "$O/coll9b.tgz" coll9b && rm -rf "$W"
