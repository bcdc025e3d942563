#!/usr/bin/env bash
# One short call on a lent 4-GPU machine (helper dist5): scripts/gpu/train_dist.py --sweep dist5. The engine's
# host-bound misses again, each built once and timed in blocks under four launch conditions (as before, garbage
# collector off, threads pinned, both), every step metered per thread (CPU time, run-queue delay, steal, GC); a
# speedometer (scripts/gpu/speedometer.py) times a fixed piece of Python on the last core all along. First the 4-GPU
# launch (its floors: plain, TP over 4 ranks, TP over 2 of a 2 x 2 mesh; then the TP 4 cases); then the 2-GPU cases
# on GPUs 0 and 1 and, beside them, the 1-GPU cases on GPU 2. Results in the output folder (rewritten after every
# case): machine.txt, log.txt, train_dist_w4.json, train_dist_w2.json, train_dist_w1.json, speed.txt.
# Without a GPU it is a CPU dry run (gloo, tiny model).
#   bash scripts/gpu/run_train_dist5.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-190}  # the whole script ends within this many seconds
W4_START_S=${W4_START_S:-80}  # no 4-GPU case starts after this many seconds
W4_END_S=${W4_END_S:-105}  # the 4-GPU launch is killed after this many seconds
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/traindist5.XXXXXX)}
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
NCPU=$(nproc --all)  # not nproc: it honours OMP_NUM_THREADS (the dist5 calls ran the speedometer on vCPU 3 so)
export SPEEDOMETER_CPU=$((NCPU - 1))
{ date -u; echo "gpus $NGPU cpus $NCPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1
  lscpu 2>&1; grep MemTotal /proc/meminfo; uname -r; head -1 /proc/stat
  grep -m3 -E '^(cpu MHz|flags)' /proc/cpuinfo | cut -c1-200
  ls /sys/devices/system/node/ 2>&1 | tr '\n' ' '; echo
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|CUDA_VISIBLE|OMP_|PYTORCH_|SPEEDOMETER)' | sort
} > "$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt" | grep -vE '^(Flags|flags|Vulnerab)'
if [ "$NGPU" -ge 1 ]; then CPU=; else CPU=--cpu-tiny; NGPU=4; fi
now() { echo $(( $(date +%s) - T0 )); }
$PY "$HERE/speedometer.py" "$OUT_DIR/speed.txt" "$SPEEDOMETER_CPU" "$BUDGET_S" &
SPEED=$!
COMMON="--sweep dist5 --warmup 2 --steps 4 --case-budget-s ${CASE_BUDGET_S:-22}"

launch() {  # $1: world size, $2: start no case after (s), $3: kill after (s), $4: extra flags; relaunched at most twice
  local w=$1 out="$OUT_DIR/train_dist_w$1.json" tries=0 rc=1 port=$((29700 + $1))
  while [ $tries -lt 2 ] && [ "$(now)" -lt "$2" ]; do
    tries=$((tries + 1))
    echo "== $(date -u +%T) +$(now)s launch $tries on $w GPUs"
    timeout -k 5 $(( $3 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$w" --master_port $port \
      "$HERE/train_dist.py" $CPU $COMMON $4 --out "$out" --state-dir "$WORK" --deadline $(( T0 + $2 ))
    rc=$?
    echo "== launch on $w GPUs ended rc=$rc at +$(now)s"
    [ $rc -eq 0 ] && break
    port=$((port + 10))
  done
}
if [ "$NGPU" -ge 4 ]; then launch 4 "$W4_START_S" "$W4_END_S" "--floors --floor-set dist5"; fi
CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 0,1 || echo "") launch 2 $((BUDGET_S - 25)) $((BUDGET_S - 3)) "" &
P2=$!
CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 2 || echo "") TRAIN_DIST_SLOT_OFFSET=2 \
  launch 1 $((BUDGET_S - 25)) $((BUDGET_S - 3)) "" &
P1=$!
wait $P2 $P1
touch "$OUT_DIR/speedometer.stop"; wait $SPEED; rm -f "$OUT_DIR/speedometer.stop"
echo "== done +$(now)s"
$PY "$HERE/summary_dist5.py" "$OUT_DIR" || true
