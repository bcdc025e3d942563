#!/usr/bin/env bash
# The host8 call (4 GPUs, issue 24), in host7c's metered protocol: every configuration of the multi-GPU family's
# unmetered misses measured again with the pace meter beside every step (train_dist.py --sweep host8), FSDP2's host
# cost over tensor-parallel parameters measured beside the meter, and the engine's calibration program at
# training-like token counts. Predictions and the record's rule committed before (scripts/gpu/host8_predictions.json).
# Everything under $OUT goes into one tar (at most 8 files come back).
#   1. scripts/gpu/pacemeter.py on vCPUs 6, 12, 16 and 20 (GPUs 0-3) all along (pace_c*.txt), the speedometer on the
#      last vCPU (speed.txt);
#   2. side by side: the 2-GPU cases on GPUs 0-1 (vCPUs 6, 12), the 1-GPU case on GPU 2 (vCPU 16), metered; on GPU 3
#      the calibration program (train_hf.py --floor) for Llama-3.2 1B and Qwen2.5 0.5B at 1 x 64, 1 x 512 and 1 x 2048
#      tokens, its instrumented forward and backward repeated with their windows and issue times, its main and
#      autograd threads on vCPU 20 (--place);
#   3. on 4 GPUs: the multi-GPU host floors (--floors --floor-set dist4b: plain, TP 4, FSDP 4, TP 2 on a 2 x 2 mesh
#      without and with FSDP2) with each rank's busy threads on its metered vCPU and FLOOR_REPS passes each, every
#      pass's window recorded; then the 4-GPU cases, metered.
# Without a GPU it is a CPU dry run (gloo, tiny model; train_hf.py --cpu-tiny).
#   bash scripts/gpu/run_train_host8.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-350}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(cd "$HERE/../.." && pwd)}  # the checkout (train_hf.py imports mlcalc from it)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/trainhost8.XXXXXX)}
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
COMMON="--sweep ${SWEEP:-host8} --warmup 2 --steps 5"
launch() {  # $1: world size, $2: GPUs, $3: start no case after (s), $4: kill after (s), $5: case budget (s), $6: extra
  local w=$1 out="$RES/train_dist_w$1.json"
  echo "== $(date -u +%T) +$(now)s launch on $w GPUs ($2)"
  CUDA_VISIBLE_DEVICES=$2 timeout -k 5 $(( $4 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$w" \
    --master_port $((29900 + w)) "$HERE/train_dist.py" $CPU $COMMON --case-budget-s "$5" --out "$out" \
    --state-dir "$WORK" --deadline $(( T0 + $3 )) ${6:-}
  echo "== launch on $w GPUs ended rc=$? at +$(now)s"
}
( [ -n "${NOFLOORS:-}" ] && exit 0  # NOFLOORS=1: the metered cases alone (host8b)
  echo "== $(date -u +%T) +$(now)s calibration program at 64/512/2048 tokens on GPU 3, busy threads on vCPU $C3"
  CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 3) PYTHONPATH="$ROOT" timeout -k 5 "${FLOOR_S:-140}" \
    $PY "$HERE/train_hf.py" $HFCPU --floor-seq "${FLOOR_SEQ:-64,512,2048}" --models "Llama-3.2 1B,Qwen2.5 0.5B" \
    --warmup 3 --steps 4 --repeat "${REPEAT:-12}" --place "$C3:$LIGHT" --out "$RES/floor.json" > "$WORK/floor.log" 2>&1
  echo "== calibration program ended rc=$? at +$(now)s"; cat "$WORK/floor.log"
) &
FLOORS=$!
[ -z "${NO1:-}" ] && launch 1 "$([ -z "$CPU" ] && echo 2)" "${P1_START:-110}" "${P1_KILL:-160}" "${CASE_S:-40}" &  # NO1=1: no 1-GPU case (host8b)
ONE=$!
launch 2 "$([ -z "$CPU" ] && echo 0,1)" "${P1_START:-110}" "${P1_KILL:-160}" "${CASE_S:-40}"
wait $FLOORS $ONE
METER_FLOORS=1 FLOOR_REPS=${FLOOR_REPS:-24} launch 4 "$([ -z "$CPU" ] && echo 0,1,2,3)" $((BUDGET_S - 45)) \
  $((BUDGET_S - 3)) "${CASE_S:-40}" "$([ -z "${NOFLOORS:-}" ] && echo --floors --floor-set dist4b)"
touch "$RES/pacemeter.stop" "$RES/speedometer.stop"; wait $SPEED $P1
rm -f "$RES/pacemeter.stop" "$RES/speedometer.stop"
echo "== done +$(now)s"
tar -C "$RES" -czf "$OUT_DIR/host8.tgz" . && ls -la "$OUT_DIR"
