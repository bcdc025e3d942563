#!/usr/bin/env bash
# coll9 (issue 24): in-place vs out-of-place all-gather / reduce-scatter on 2 GPUs (and 4 where the machine has
# them), NVLink multicast off. Usage: bash run_coll9.sh OUT_DIR   (run from the folder holding inplace_collectives.py)
set -u -o pipefail
O=${1:?out}; W=$O/coll9; mkdir -p "$W"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink -s 2>&1 | head -24
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
} > "$W/machine.txt" 2>&1
NGPU=$(python3 -c 'import torch; print(torch.cuda.device_count())')
echo "gpus: $NGPU"; grep -m3 -E "H100|H200" "$W/machine.txt"
run() {  # n label
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $(($1 - 1))) NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
  NCCL_DEBUG_FILE="$W/nccl_$2.%p.txt" timeout 170 torchrun --standalone --nproc_per_node="$1" inplace_collectives.py \
    --out "$W/inplace_$2.json" --reps 3 --label "$2" > "$W/log_$2.txt" 2>&1
  echo "rc=$?" >> "$W/log_$2.txt"; tail -7 "$W/log_$2.txt"
}
run 2 n2
if [ "$NGPU" -ge 4 ]; then run 4 n4; fi
date -u >> "$W/machine.txt"
tar -C "$O" -czf "$O/coll9.tgz" coll9 && rm -rf "$W"
ls -la "$O"
