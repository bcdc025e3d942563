#!/usr/bin/env bash
# The dist6 call (2 GPUs): every host-bound step timed beside its own vCPU's pace.
#   1. scripts/gpu/pacemeter.py on vCPU 6 (GPU 0's rank) and vCPU 12 (GPU 1's rank) all along (pace_c6.txt,
#      pace_c12.txt), the speedometer on the last vCPU as in the dist5 calls (speed.txt);
#   2. at once, side by side: the engine's calibration program (scripts/gpu/train_hf.py --floor: every model of the
#      one-GPU sweep at 1 x 64 tokens, whose forward and backward give the engine's host seconds per op) on GPU 1,
#      the whole process on vCPU 12 (floor.json); and scripts/gpu/train_dist.py --sweep dist6's one-GPU cases on
#      GPU 0, the rank's busy threads on vCPU 6 (train_dist_w1.json);
#   3. the two-GPU cases on GPUs 0 and 1, busy threads on vCPUs 6 and 12 (train_dist_w2.json).
# Without a GPU it is a CPU dry run (gloo, tiny model; train_hf.py --cpu-tiny).
#   bash scripts/gpu/run_train_dist6.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-230}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)  # the checkout (train_hf.py imports mlcalc from it)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/traindist6.XXXXXX)}
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
NCPU=$(nproc --all)  # not nproc: it honours OMP_NUM_THREADS
C0=${C0:-6}; C1=${C1:-12}
if [ "$NCPU" -le 12 ]; then C0=0; C1=$((NCPU > 1 ? 1 : 0)); fi  # a small CPU box (the dry run)
export SPEEDOMETER_CPU=$((NCPU - 1)) METER_CPUS="$C0,$C1" METER_LIGHT="${METER_LIGHT:-24,25,26,27,28,29}"
{ date -u; echo "gpus $NGPU cpus $NCPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total --format=csv 2>&1
  lscpu 2>&1 | grep -vE '^(Flags|Vulnerab)'; uname -r; head -1 /proc/stat
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
  $PY -c 'import transformers; print("transformers", transformers.__version__)' 2>&1 | tail -1
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|CUDA_VISIBLE|OMP_|PYTORCH_|SPEEDOMETER|METER_)' | sort
} > "$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt"
if [ "$NGPU" -ge 1 ]; then CPU=; HFCPU=--floor; else CPU=--cpu-tiny; HFCPU=--cpu-tiny; fi
now() { echo $(( $(date +%s) - T0 )); }
$PY "$HERE/pacemeter.py" "$OUT_DIR/pace_c$C0.txt" "$C0" "$BUDGET_S" &
P0=$!
if [ "$C1" != "$C0" ]; then $PY "$HERE/pacemeter.py" "$OUT_DIR/pace_c$C1.txt" "$C1" "$BUDGET_S" & P1=$!; else P1=; fi
$PY "$HERE/speedometer.py" "$OUT_DIR/speed.txt" "$SPEEDOMETER_CPU" "$BUDGET_S" &
SPEED=$!
COMMON="--sweep dist6 --warmup 2 --steps 5"
launch() {  # $1: world size, $2: GPUs, $3: start no case after (s), $4: kill after (s), $5: case budget (s)
  local w=$1 out="$OUT_DIR/train_dist_w$1.json"
  echo "== $(date -u +%T) +$(now)s launch on $w GPUs ($2)"
  CUDA_VISIBLE_DEVICES=$2 timeout -k 5 $(( $4 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$w" \
    --master_port $((29900 + w)) "$HERE/train_dist.py" $CPU $COMMON --case-budget-s "$5" --out "$out" \
    --state-dir "$WORK" --deadline $(( T0 + $3 ))
  echo "== launch on $w GPUs ended rc=$? at +$(now)s"
}
(
  echo "== $(date -u +%T) +$(now)s calibration floors on vCPU $C1 (GPU 1)"
  CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 1) PYTHONPATH="$ROOT" timeout -k 5 100 taskset -c "$C1" \
    $PY "$HERE/train_hf.py" $HFCPU --warmup 3 --steps 6 --out "$OUT_DIR/floor.json" > "$WORK/floor.log" 2>&1
  echo "== calibration floors ended rc=$? at +$(now)s"; cat "$WORK/floor.log"
) &
FLOORS=$!
launch 1 "$([ -z "$CPU" ] && echo 0)" 85 110 22
wait $FLOORS
launch 2 "$([ -z "$CPU" ] && echo 0,1)" $((BUDGET_S - 35)) $((BUDGET_S - 3)) 30
touch "$OUT_DIR/pacemeter.stop" "$OUT_DIR/speedometer.stop"; wait $SPEED $P0 $P1
rm -f "$OUT_DIR/pacemeter.stop" "$OUT_DIR/speedometer.stop"
echo "== done +$(now)s"
$PY "$HERE/summary_dist6.py" "$OUT_DIR" || true
