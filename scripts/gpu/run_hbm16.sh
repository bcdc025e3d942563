#!/usr/bin/env bash
# hbm16 (issue 24): a bf16 copy and add, flash attention and GEMMs alone and beside an NCCL all-gather /
# reduce-scatter on 4 GPUs, then on 2 of them. Predictions landed first: scripts/gpu/hbm16_predictions.json.
# NVLink multicast off. Writes 5 files: machine.txt, log.txt, nccl_init.txt, hbm16_w4.json, hbm16_w2.json.
set -u -o pipefail
O=${1:?out}; mkdir -p "$O/raw"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")"
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv; } > "$O/machine.txt" 2>&1
for W in 4 2; do
  echo "== world $W" >> "$O/log.txt"
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((W - 1))) NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE="$O/raw/nccl.w$W.%p.txt" \
    timeout 170 torchrun --standalone --nproc_per_node=$W hbm16.py --out "$O/raw" >> "$O/log.txt" 2>&1
  echo "rc=$?" >> "$O/log.txt"
  for f in "$O"/raw/nccl.w$W.*.txt; do echo "-- world $W"; grep -h "NCCL version\|coll channels\|nvls\|Channel 00" "$f" | head -6; done >> "$O/nccl_init.txt"
  python3 -c "
import json, glob, sys
W = $W
ranks = [json.load(open(p)) for p in sorted(glob.glob('$O/raw/hbm16_w%d_rank*.json' % W))]
json.dump({'world': W, 'ranks': ranks}, open('$O/hbm16_w%d.json' % W, 'w'), indent=1)
print('merged', W, len(ranks))" >> "$O/log.txt" 2>&1
done
rm -rf "$O/raw"; date -u >> "$O/machine.txt"; tail -40 "$O/log.txt"
