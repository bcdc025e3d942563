#!/usr/bin/env bash
# The queue15 call (1 GPU, issue 24): scripts/gpu/queue15_curve.py pinned to one vCPU with the pace meter on the same
# vCPU, the machine described first. Predictions written before the call: scripts/gpu/queue15_predictions.json.
#   bash scripts/gpu/run_queue15.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
CPU=${QUEUE15_CPU:-3}
mkdir -p "$OUT_DIR"
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total --format=csv 2>&1
  lscpu 2>&1 | grep -vE '^(Flags|Vulnerab)'; uname -r
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
  echo "vCPU $CPU (the process and the pace meter)"; env | grep -E '^(NCCL_|TORCH_SYMM|OMP_|PYTORCH_)' | sort
} > "$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt"
EXTRA=
$PY -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || EXTRA=--cpu-tiny
$PY "$HERE/pacemeter.py" "$OUT_DIR/pace_c$CPU.txt" "$CPU" "${BUDGET_S:-420}" &
PM=$!
taskset -c "$CPU" timeout -k 5 "${BUDGET_S:-420}" $PY "$HERE/queue15_curve.py" "$OUT_DIR/queue15_curve.json" $EXTRA \
  2>&1 | tee "$OUT_DIR/log.txt"
touch "$OUT_DIR/pacemeter.stop"; sleep 0.2; kill "$PM" 2>/dev/null; wait "$PM" 2>/dev/null
rm -f "$OUT_DIR/pacemeter.stop"
ls -la "$OUT_DIR"
