#!/usr/bin/env bash
# The h100mg call (session 37, issue 24): the first multi-GPU sweep asked of 2 H100s (nvidia-h100-x2; it may come as
# 2 H200s: machine.txt names the card), metered as the meter12 call (scripts/gpu/run_meter12.sh) on a 2-GPU host;
# predictions (the engine's default and both host rules at every pace) committed before the call:
# scripts/gpu/h100mg_predictions.json.
#   1. scripts/gpu/pacemeter.py on vCPUs C0, C1 (6, 12: the busy vCPU of the ranks on GPUs 0-1) all along
#      (pace_c*.txt), the speedometer on the last vCPU (speed.txt);
#   2. the engine's calibration floor at the call's start on GPU 1 alone (train_hf.py --floor, Llama-3.2 1B at 1 x 64
#      tokens with and without checkpointing, its main and autograd threads on metered vCPU C1: floor.json);
#   3. the sweep (train_dist.py --sweep h100mg: meter12's TP 2 1B at 8 x 1024 first as the baseline, then FSDP2,
#      TP 2 and the 1F1B pipeline) in one launch on GPUs 0-1, metered; every case's warm-up steps, the first among
#      them, recorded apart (warmup_s_rank) (train_dist_w2.json);
#   4. the calibration floor again at the call's end (floor_end.json), as in 2.
# Everything under $OUT as one tar (h100mg.tgz) and the log. Without 2 GPUs: a CPU dry run (gloo, tiny model).
#   bash scripts/gpu/run_h100mg.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-470}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(cd "$HERE/../.." && pwd)}  # the checkout (train_hf.py imports mlcalc from it)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/h100mg.XXXXXX)}
RES="$WORK/res"
mkdir -p "$OUT_DIR" "$RES"
exec > >(tee -a "$RES/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
NCPU=$(nproc --all)  # not nproc: it honours OMP_NUM_THREADS
C0=${C0:-6}; C1=${C1:-12}
LIGHT=${METER_LIGHT:-24,25,26,27,28,29}
if [ "$NCPU" -le 20 ]; then C0=0; C1=$((NCPU > 1 ? 1 : 0)); LIGHT=$C1; fi  # a small CPU box (dry run)
export SPEEDOMETER_CPU=$((NCPU - 1)) METER_CPUS="$C0,$C1" METER_LIGHT="$LIGHT"
{ date -u; echo "gpus $NGPU cpus $NCPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1
  lscpu 2>&1 | grep -vE '^(Flags|Vulnerab)'; uname -r; head -1 /proc/stat; grep MemTotal /proc/meminfo
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "nccl", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-",
    "python", sys.version.split()[0])'
  $PY -c 'import transformers; print("transformers", transformers.__version__)' 2>&1 | tail -1
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|CUDA_VISIBLE|OMP_|PYTORCH_|SPEEDOMETER|METER_)' | sort
} > "$RES/machine.txt" 2>&1
cat "$RES/machine.txt"
if [ "$NGPU" -ge 2 ]; then CPU=; HFCPU=--floor; else CPU=--cpu-tiny; HFCPU=--cpu-tiny; fi
now() { echo $(( $(date +%s) - T0 )); }
P1=; SEEN=" "
for c in $C0 $C1; do
  case "$SEEN" in *" $c "*) continue ;; esac
  SEEN="$SEEN$c "; $PY "$HERE/pacemeter.py" "$RES/pace_c$c.txt" "$c" "$BUDGET_S" & P1="$P1 $!"
done
$PY "$HERE/speedometer.py" "$RES/speed.txt" "$SPEEDOMETER_CPU" "$BUDGET_S" &
SPEED=$!
floor() {  # $1: output file, $2: kill after (s)
  echo "== $(date -u +%T) +$(now)s calibration floor on GPU 1 ($1), busy threads on vCPU $C1"
  CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 1) PYTHONPATH="$ROOT" timeout -k 5 "$2" \
    $PY "$HERE/train_hf.py" $HFCPU --floor-seq 64 --models "Llama-3.2 1B" --warmup 3 --steps 4 \
    --repeat "${REPEAT:-12}" --place "$C1:$LIGHT" --out "$RES/$1" > "$WORK/$1.log" 2>&1
  echo "== calibration floor ended rc=$? at +$(now)s"; cat "$WORK/$1.log"
}
floor floor.json 45
echo "== $(date -u +%T) +$(now)s launch on 2 GPUs"
CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 0,1) timeout -k 5 $(( BUDGET_S - 45 - $(now) )) \
  $PY -m torch.distributed.run --nproc_per_node 2 --master_port 29921 "$HERE/train_dist.py" $CPU \
  --sweep h100mg --warmup 2 --steps 5 --case-budget-s "${CASE_S:-28}" --out "$RES/train_dist_w2.json" \
  --state-dir "$WORK/state2" --deadline $(( T0 + BUDGET_S - 90 ))
echo "== launch on 2 GPUs ended rc=$? at +$(now)s"
LEFT=$((BUDGET_S - 5 - $(now))); floor floor_end.json $((LEFT > 25 ? LEFT : 25))
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$RES/machine.txt" 2>&1
touch "$RES/pacemeter.stop" "$RES/speedometer.stop"; wait $SPEED $P1
rm -f "$RES/pacemeter.stop" "$RES/speedometer.stop"
echo "== done +$(now)s"
tar -C "$RES" -czf "$OUT_DIR/h100mg.tgz" . && cp "$RES/log.txt" "$OUT_DIR/log.txt" && ls -la "$OUT_DIR"
