#!/usr/bin/env bash
# The dist5 second call (2 or more GPUs): which vCPUs share a physical core (scripts/gpu/smt_map.py: the VM shows
# one thread per core), then scripts/gpu/train_dist.py --sweep dist5b: TP 2 3B and the 1F1B pipeline 1B on GPUs 0
# and 1, then the checkpointed 3B on GPU 0 alone, each timed in blocks with the busy threads placed as before
# ("base"), each rank on a core of its own ("apart") and the two ranks on the two siblings of one core ("clash");
# the speedometer on the last core all along. Results: machine.txt, log.txt, smt_map.json, speed.txt,
# train_dist_w2.json, train_dist_w1.json. Without a GPU it is a CPU dry run (gloo, tiny model).
#   bash scripts/gpu/run_train_dist5b.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-150}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/traindist5b.XXXXXX)}
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
NCPU=$(nproc --all)  # not nproc: it honours OMP_NUM_THREADS (the dist5 calls ran the speedometer on vCPU 3 so)
export SPEEDOMETER_CPU=$((NCPU - 1)) SMT_MAP="$OUT_DIR/smt_map.json"
{ date -u; echo "gpus $NGPU cpus $NCPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total --format=csv 2>&1
  lscpu 2>&1 | grep -vE '^(Flags|Vulnerab)'; uname -r; head -1 /proc/stat
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|CUDA_VISIBLE|OMP_|PYTORCH_|SPEEDOMETER|SMT_)' | sort
} > "$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt"
if [ "$NGPU" -ge 1 ]; then CPU=; else CPU=--cpu-tiny; fi
now() { echo $(( $(date +%s) - T0 )); }
timeout 40 $PY "$HERE/smt_map.py" "$SMT_MAP" || echo "smt map failed rc=$?"
$PY "$HERE/speedometer.py" "$OUT_DIR/speed.txt" "$SPEEDOMETER_CPU" "$BUDGET_S" &
SPEED=$!
COMMON="--sweep dist5b --warmup 2 --steps 4 --case-budget-s ${CASE_BUDGET_S:-20}"
launch() {  # $1: world size, $2: GPUs, $3: start no case after (s), $4: kill after (s)
  local w=$1 out="$OUT_DIR/train_dist_w$1.json"
  echo "== $(date -u +%T) +$(now)s launch on $w GPUs ($2)"
  CUDA_VISIBLE_DEVICES=$2 timeout -k 5 $(( $4 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$w" \
    --master_port $((29900 + w)) "$HERE/train_dist.py" $CPU $COMMON --out "$out" --state-dir "$WORK" \
    --deadline $(( T0 + $3 ))
  echo "== launch on $w GPUs ended rc=$? at +$(now)s"
}
launch 2 "$([ -z "$CPU" ] && echo 0,1)" $((BUDGET_S - 50)) $((BUDGET_S - 30))
launch 1 "$([ -z "$CPU" ] && echo 0)" $((BUDGET_S - 15)) $((BUDGET_S - 3))
touch "$OUT_DIR/speedometer.stop"; wait $SPEED; rm -f "$OUT_DIR/speedometer.stop"
echo "== done +$(now)s"
$PY "$HERE/summary_dist5.py" "$OUT_DIR" || true
