#!/usr/bin/env bash
# overlap15 (issue 24): GEMMs and flash attention alone and beside an NCCL all-gather / reduce-scatter on 2 GPUs.
# Predictions written first: scripts/gpu/overlap15_predictions.json. NVLink multicast off.
set -u -o pipefail
O=${1:?out}; mkdir -p "$O"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}
cd "$(dirname "$0")"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv; } > "$O/machine.txt" 2>&1
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE="$O/nccl.%p.txt" timeout 420 \
  torchrun --standalone --nproc_per_node=2 overlap15.py --out "$O" > "$O/log.txt" 2>&1
echo "rc=$?" >> "$O/log.txt"; tail -20 "$O/log.txt"
for f in "$O"/nccl.*.txt; do grep -h "NCCL version\|coll channels\|nvls\|Channel 00" "$f" | head -6; done > "$O/nccl_init.txt"; rm -f "$O"/nccl.*.txt
date -u >> "$O/machine.txt"
