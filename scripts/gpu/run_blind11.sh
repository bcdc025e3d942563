#!/usr/bin/env bash
# The blind11 call (session 35, issue 24): 4-GPU training at shapes the book never measured, predicted before the call
# (scripts/gpu/blind11_predictions.json, scripts/gpu/predict_blind11.py). One 4-GPU machine, one part after another:
#   1. GPU 0 alone: the engine's 1-GPU calibration floor (train_hf.py --floor, Llama-3.2 1B at 1 x 64 tokens, with
#      and without checkpointing): this host's plain op against the calibration runs';
#   2. all 4 GPUs, one torchrun launch: train_dist.py --baseline --floors --floor-set blind11 (matmul, collectives, the
#      host floors of the plain, TP and FSDP2 programs with and without checkpointing and of FSDP2 over DTensor), then
#      --sweep blind11: 14 new cases (FSDP2 4, TP 4, 1F1B PP 4, FSDP 2 x TP 2, PP 2 x FSDP 2, PP 2 x TP 2) and 2
#      baseline cases the record holds (-base), each under its case budget, no case started after the deadline.
# Results in $OUT/blind11.tar.gz (packed every 15 s and after each part) and $OUT/log.txt.
# Without a GPU: a CPU dry run (tiny models, gloo, 4 ranks).
#   bash scripts/gpu/run_blind11.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/blind11.XXXXXX)}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=3 OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} TOKENIZERS_PARALLELISM=false
export TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
BUDGET_S=${BUDGET_S:-310}  # the whole script ends within this
mkdir -p "$OUT_DIR" "$WORK"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/blind11.tar.gz"; }
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU cpus $(nproc --all)"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz|Hypervisor)'; grep MemTotal /proc/meminfo
  uname -r
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "nccl", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-",
    "python", sys.version.split()[0])'
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|OMP_)' | sort
} > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
pack
(while sleep 15; do pack; done) & PACKER=$!
trap 'kill $PACKER 2>/dev/null; pack' EXIT
if [ "$NGPU" -ge 4 ]; then CPU=; HF=--floor; else CPU=--cpu-tiny; HF=--cpu-tiny; fi

echo "== $(date -u +%T) +$(el)s GPU 0: calibration floor (train_hf.py $HF, Llama-3.2 1B)"
CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 0) PYTHONPATH="$ROOT" timeout -k 5 45 $PY "$HERE/train_hf.py" $HF \
  --models "Llama-3.2 1B" --out "$WORK/train_hf_floor.json" > "$WORK/log_train_hf_floor.txt" 2>&1
echo "   rc $?"; tail -4 "$WORK/log_train_hf_floor.txt" | cut -c1-200
pack

END=$((BUDGET_S - 8))
echo "== $(date -u +%T) +$(el)s 4 GPUs: train_dist --baseline --floors --floor-set blind11 --sweep blind11"
timeout -k 5 $((END - $(el))) $PY -m torch.distributed.run --nproc_per_node 4 --master_port 29811 \
  "$HERE/train_dist.py" $CPU --sweep blind11 --baseline --floors --floor-set blind11 --warmup 2 --steps 5 \
  --case-budget-s ${CASE_BUDGET_S:-14} --out "$WORK/train_dist_w4.json" --state-dir "$WORK/state" \
  --deadline $((T0 + END - 25)) > "$WORK/log_train_dist.txt" 2>&1
echo "   rc $?"; grep -E "^w4-|ERROR|host floors|baseline" "$WORK/log_train_dist.txt" | cut -c1-220
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$WORK/machine.txt" 2>&1
echo "== $(date -u +%T) +$(el)s done"
pack
