#!/usr/bin/env bash
# The host7 call (4 GPUs, issue 24): the engine's host constants measured beside the pace meter in the placement the
# training runs use (each process's main and autograd threads on one metered vCPU, every other thread on the light
# vCPUs), and metered training blocks to check a pace-aware prediction written before the call
# (scripts/gpu/host7_predictions.json). Everything under $OUT goes into one tar (at most 8 files come back).
#   1. scripts/gpu/pacemeter.py on vCPUs 6, 12, 16 and 20 (GPUs 0-3) all along (pace_c*.txt), the speedometer on the
#      last vCPU (speed.txt);
#   2. side by side: the engine's calibration program (scripts/gpu/train_hf.py --floor: every model of the one-GPU
#      sweep at 1 x 64 tokens, with and without checkpointing, its instrumented forward and backward repeated, each
#      with its window) on GPU 3, its main and autograd threads on vCPU 20 (--place); train_dist.py --sweep host7's
#      2-GPU cases on GPUs 0-1 (vCPUs 6, 12) and its 1-GPU cases on GPU 2 (vCPU 16), metered;
#   3. on 4 GPUs: the multi-GPU host floors (--floors --floor-set dist4b: plain with and without checkpointing, TP 4,
#      FSDP 4, TP 2 on a 2 x 2 mesh without and with FSDP2), each rank's busy threads on its metered vCPU
#      (METER_FLOORS=1) and every pass's window recorded, then the 4-GPU cases, metered.
# Without a GPU it is a CPU dry run (gloo, tiny model; train_hf.py --cpu-tiny).
#   bash scripts/gpu/run_train_host7.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-330}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(cd "$HERE/../.." && pwd)}  # the checkout (train_hf.py imports mlcalc from it)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/trainhost7.XXXXXX)}
RES="$WORK/res"
mkdir -p "$OUT_DIR" "$RES"
exec > >(tee -a "$RES/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
NCPU=$(nproc --all)  # not nproc: it honours OMP_NUM_THREADS
C0=${C0:-6}; C1=${C1:-12}; C2=${C2:-16}; C3=${C3:-20}
LIGHT=${METER_LIGHT:-24,25,26,27,28,29}
if [ "$NCPU" -le 20 ]; then C0=0; C1=$((NCPU > 1 ? 1 : 0)); C2=$C0; C3=$C1; LIGHT=$C1; fi  # a small CPU box (dry run)
export SPEEDOMETER_CPU=$((NCPU - 1)) METER_CPUS="$C0,$C1,$C2,$C3" METER_LIGHT="$LIGHT"
{ date -u; echo "gpus $NGPU cpus $NCPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total --format=csv 2>&1
  lscpu 2>&1 | grep -vE '^(Flags|Vulnerab)'; uname -r; head -1 /proc/stat
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
  $PY -c 'import transformers; print("transformers", transformers.__version__)' 2>&1 | tail -1
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|CUDA_VISIBLE|OMP_|PYTORCH_|SPEEDOMETER|METER_)' | sort
} > "$RES/machine.txt" 2>&1
cat "$RES/machine.txt"
if [ "$NGPU" -ge 1 ]; then CPU=; HFCPU=--floor; else CPU=--cpu-tiny; HFCPU=--cpu-tiny; fi
now() { echo $(( $(date +%s) - T0 )); }
P1=; SEEN=" "
for c in $C0 $C1 $C2 $C3; do
  case "$SEEN" in *" $c "*) continue ;; esac
  SEEN="$SEEN$c "; $PY "$HERE/pacemeter.py" "$RES/pace_c$c.txt" "$c" "$BUDGET_S" & P1="$P1 $!"
done
$PY "$HERE/speedometer.py" "$RES/speed.txt" "$SPEEDOMETER_CPU" "$BUDGET_S" &
SPEED=$!
COMMON="--sweep ${SWEEP:-host7} --warmup 2 --steps 5"
launch() {  # $1: world size, $2: GPUs, $3: start no case after (s), $4: kill after (s), $5: case budget (s), $6: extra
  local w=$1 out="$RES/train_dist_w$1.json"
  echo "== $(date -u +%T) +$(now)s launch on $w GPUs ($2)"
  CUDA_VISIBLE_DEVICES=$2 timeout -k 5 $(( $4 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$w" \
    --master_port $((29900 + w)) "$HERE/train_dist.py" $CPU $COMMON --case-budget-s "$5" --out "$out" \
    --state-dir "$WORK" --deadline $(( T0 + $3 )) ${6:-}
  echo "== launch on $w GPUs ended rc=$? at +$(now)s"
}
if [ -z "${ONLY4:-}" ]; then  # ONLY4=1: the 4-GPU part alone (the second call, after the first one's floors hung)
( [ -n "${NOFLOORS:-}" ] && exit 0  # NOFLOORS=1: the metered cases alone (host7c)
  echo "== $(date -u +%T) +$(now)s calibration floors on GPU 3, busy threads on vCPU $C3"
  CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 3) PYTHONPATH="$ROOT" timeout -k 5 "${FLOOR_S:-120}" \
    $PY "$HERE/train_hf.py" $HFCPU --warmup 3 --steps 4 --repeat "${REPEAT:-12}" --place "$C3:$LIGHT" \
    --out "$RES/floor.json" > "$WORK/floor.log" 2>&1
  echo "== calibration floors ended rc=$? at +$(now)s"; cat "$WORK/floor.log"
) &
FLOORS=$!
launch 1 "$([ -z "$CPU" ] && echo 2)" 70 110 28 &
ONE=$!
launch 2 "$([ -z "$CPU" ] && echo 0,1)" 70 110 28
wait $FLOORS $ONE
fi
METER_FLOORS=1 FLOOR_REPS=${FLOOR_REPS:-12} launch 4 "$([ -z "$CPU" ] && echo 0,1,2,3)" $((BUDGET_S - 40)) \
  $((BUDGET_S - 3)) 30 "$([ -z "${NOFLOORS:-}" ] && echo --floors --floor-set dist4b)"
touch "$RES/pacemeter.stop" "$RES/speedometer.stop"; wait $SPEED $P1
rm -f "$RES/pacemeter.stop" "$RES/speedometer.stop"
echo "== done +$(now)s"
tar -C "$RES" -czf "$OUT_DIR/host7.tgz" . && ls -la "$OUT_DIR"
