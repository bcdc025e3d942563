#!/usr/bin/env bash
# The serve5 call (issue 25), one GPU: scripts/gpu/serve5_probe.py's sections, each under its own cap, results
# written after every point; the machine described first.   Usage: bash run_serve5.sh "$OUT" [--quick --device cpu]
set -u -o pipefail
OUT_DIR=${1:?give an output folder}; shift
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Hypervisor)'; uname -r
  $PY -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
} > "$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt"
timeout ${TIMEOUT_S:-345} $PY "$HERE/serve5_probe.py" --out-dir "$OUT_DIR" --deadline-s ${DEADLINE_S:-335} \
  --sections ${SECTIONS:-machine,matmul,engine,mla} --caps ${CAPS:-matmul=100,engine=140,mla=70,small=120} "$@" 2>&1 | grep -vE "Warning|warn\("
echo "rc $?"; date -u
