#!/usr/bin/env bash
# The meter12 call (session 36, issue 24): the multi-GPU family's six unmetered blind misses (host-bound tensor-parallel
# layouts of the blind10, blind11 and blind11b calls) measured again in the host8 call's metered protocol, and five
# tensor-parallel configurations no call ran (train_dist.py --sweep meter12); predictions (the engine's default and the
# metered rule at every pace) committed before the call: scripts/gpu/meter12_predictions.json.
#   1. scripts/gpu/pacemeter.py on vCPUs C0-C3 (6, 12, 16, 20: the busy vCPU of the ranks on GPUs 0-3) all along
#      (pace_c*.txt), the speedometer on the last vCPU (speed.txt);
#   2. the engine's calibration floor at the call's start on GPU 3 alone (train_hf.py --floor, Llama-3.2 1B at 1 x 64
#      tokens with and without checkpointing, its instrumented forward and backward repeated REPEAT times with their
#      windows and issue times, its main and autograd threads on metered vCPU C3: floor.json);
#   3. the 2-GPU cases as two launches side by side (lane a, the blind10 repeats, on GPUs 0-1; lane b, the new
#      2-GPU cases, on GPUs 2-3), metered; their results merged into train_dist_w2.json (each launch's own file in
#      lanes/);
#   4. the 4-GPU cases in one launch, metered (train_dist_w4.json);
#   5. the calibration floor again at the call's end (floor_end.json), as in 2.
# Everything under $OUT as one tar (meter12.tgz) and the log. Without a GPU: a CPU dry run (gloo, tiny model).
#   bash scripts/gpu/run_meter12.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-450}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(cd "$HERE/../.." && pwd)}  # the checkout (train_hf.py imports mlcalc from it)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/meter12.XXXXXX)}
RES="$WORK/res"
mkdir -p "$OUT_DIR" "$RES/lanes"
exec > >(tee -a "$RES/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
NCPU=$(nproc --all)  # not nproc: it honours OMP_NUM_THREADS
C0=${C0:-6}; C1=${C1:-12}; C2=${C2:-16}; C3=${C3:-20}
LIGHT=${METER_LIGHT:-24,25,26,27,28,29}
if [ "$NCPU" -le 20 ]; then C0=0; C1=$((NCPU > 1 ? 1 : 0)); C2=$C0; C3=$C1; LIGHT=$C1; fi  # a small CPU box (dry run)
export SPEEDOMETER_CPU=$((NCPU - 1)) METER_CPUS="$C0,$C1,$C2,$C3" METER_LIGHT="$LIGHT"
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
if [ "$NGPU" -ge 4 ]; then CPU=; HFCPU=--floor; else CPU=--cpu-tiny; HFCPU=--cpu-tiny; fi
now() { echo $(( $(date +%s) - T0 )); }
P1=; SEEN=" "
for c in $C0 $C1 $C2 $C3; do
  case "$SEEN" in *" $c "*) continue ;; esac
  SEEN="$SEEN$c "; $PY "$HERE/pacemeter.py" "$RES/pace_c$c.txt" "$c" "$BUDGET_S" & P1="$P1 $!"
done
$PY "$HERE/speedometer.py" "$RES/speed.txt" "$SPEEDOMETER_CPU" "$BUDGET_S" &
SPEED=$!
floor() {  # $1: output file, $2: kill after (s)
  echo "== $(date -u +%T) +$(now)s calibration floor on GPU 3 ($1), busy threads on vCPU $C3"
  CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 3) PYTHONPATH="$ROOT" timeout -k 5 "$2" \
    $PY "$HERE/train_hf.py" $HFCPU --floor-seq 64 --models "Llama-3.2 1B" --warmup 3 --steps 4 \
    --repeat "${REPEAT:-12}" --place "$C3:$LIGHT" --out "$RES/$1" > "$WORK/$1.log" 2>&1
  echo "== calibration floor ended rc=$? at +$(now)s"; cat "$WORK/$1.log"
}
COMMON="--sweep meter12 --warmup 2 --steps 5"
launch() {  # $1: world, $2: GPUs, $3: start no case after (s), $4: kill after (s), $5: output, $6: lane, $7: port
  echo "== $(date -u +%T) +$(now)s launch on $1 GPUs ($2) lane '${6}'"
  CUDA_VISIBLE_DEVICES=$2 timeout -k 5 $(( $4 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$1" \
    --master_port "$7" "$HERE/train_dist.py" $CPU $COMMON --case-budget-s "${CASE_S:-34}" --out "$5" \
    --state-dir "$WORK/state$6$1" --deadline $(( T0 + $3 )) ${6:+--lane $6}
  echo "== launch on $1 GPUs lane '${6}' ended rc=$? at +$(now)s"
}
floor floor.json 45
launch 2 "$([ -z "$CPU" ] && echo 0,1)" "${W2_START:-125}" "${W2_KILL:-165}" "$RES/lanes/train_dist_w2a.json" a 29911 &
LA=$!
launch 2 "$([ -z "$CPU" ] && echo 2,3)" "${W2_START:-125}" "${W2_KILL:-165}" "$RES/lanes/train_dist_w2b.json" b 29912
wait $LA
$PY - "$RES/lanes/train_dist_w2a.json" "$RES/lanes/train_dist_w2b.json" "$RES/train_dist_w2.json" <<'EOF'
import json, os, sys
a, b, out = sys.argv[1:4]
got = [json.load(open(p)) for p in (a, b) if os.path.exists(p)]
if got:
    m = dict(got[0])
    m["cases"] = [c for g in got for c in g["cases"]]
    m["launches"] = [{"file": os.path.basename(p), "environment": g["environment"]} for p, g in zip((a, b), got)]
    json.dump(m, open(out, "w"), indent=1)
    print("merged", len(m["cases"]), "2-GPU cases")
EOF
launch 4 "$([ -z "$CPU" ] && echo 0,1,2,3)" $((BUDGET_S - 95)) $((BUDGET_S - 50)) "$RES/train_dist_w4.json" "" 29914
LEFT=$((BUDGET_S - 5 - $(now))); floor floor_end.json $((LEFT > 25 ? LEFT : 25))
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$RES/machine.txt" 2>&1
touch "$RES/pacemeter.stop" "$RES/speedometer.stop"; wait $SPEED $P1
rm -f "$RES/pacemeter.stop" "$RES/speedometer.stop"
echo "== done +$(now)s"
tar -C "$RES" -czf "$OUT_DIR/meter12.tgz" . && cp "$RES/log.txt" "$OUT_DIR/log.txt" && ls -la "$OUT_DIR"
