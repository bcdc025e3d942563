#!/usr/bin/env bash
# One short call on a lent 4-GPU machine (helper dist4b): scripts/gpu/train_dist.py --sweep dist4b. First the
# 4-GPU launch: its baseline, the host floors with FSDP 2 x TP 2 (--floor-set dist4b) and the 4-GPU cases; then
# the 2-GPU cases on GPUs 0 and 1 and, beside them, the 1-GPU cases on GPU 2. Every case has the host probe
# (the plain program's floor) timed just before and just after it. Results in the output folder (rewritten after
# every case): machine.txt, log.txt, train_dist_w4.json, train_dist_w2.json, train_dist_w1.json.
# Without a GPU it is a CPU dry run (gloo, tiny model).
#   bash scripts/gpu/run_train_dist4b.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-175}  # the whole script ends within this many seconds
W4_START_S=${W4_START_S:-80}  # no 4-GPU case starts after this many seconds
W4_END_S=${W4_END_S:-100}  # the 4-GPU launch is killed after this many seconds
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/traindist4b.XXXXXX)}
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz)'; grep MemTotal /proc/meminfo; uname -r
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|CUDA_VISIBLE|OMP_|PYTORCH_)' | sort
} > "$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt"
if [ "$NGPU" -ge 1 ]; then CPU=; SWEEP="--sweep dist4b"; else CPU=--cpu-tiny; SWEEP=; NGPU=4; fi
now() { echo $(( $(date +%s) - T0 )); }
COMMON="--warmup 2 --steps 5 --case-budget-s ${CASE_BUDGET_S:-7}"

launch() {  # $1: world size, $2: start no case after (s), $3: kill after (s), $4: extra flags; relaunched at most twice
  local w=$1 out="$OUT_DIR/train_dist_w$1.json" tries=0 rc=1 port=$((29600 + $1))
  while [ $tries -lt 2 ] && [ "$(now)" -lt "$2" ]; do
    tries=$((tries + 1))
    echo "== $(date -u +%T) +$(now)s launch $tries on $w GPUs"
    timeout -k 5 $(( $3 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$w" --master_port $port \
      "$HERE/train_dist.py" $CPU $SWEEP $COMMON $4 --out "$out" --state-dir "$WORK" --deadline $(( T0 + $2 ))
    rc=$?
    echo "== launch on $w GPUs ended rc=$rc at +$(now)s"
    [ $rc -eq 0 ] && break
    port=$((port + 10))
  done
}
if [ "$NGPU" -ge 4 ]; then launch 4 "$W4_START_S" "$W4_END_S" "--baseline --floors --floor-set dist4b"; fi
CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 0,1 || echo "") launch 2 $((BUDGET_S - 20)) $((BUDGET_S - 3)) "" &
P2=$!
CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 2 || echo "") launch 1 $((BUDGET_S - 20)) $((BUDGET_S - 3)) "" &
P1=$!
wait $P2 $P1
echo "== done +$(now)s"
$PY - "$OUT_DIR" <<'PY'
import glob, json, statistics, sys
for f in sorted(glob.glob(sys.argv[1] + "/train_dist_w*.json")):
    d = json.load(open(f))
    e = d["environment"]
    print(f.split("/")[-1], e.get("device_name"), e.get("torch"), e.get("nccl"))
    fl = d.get("host_floors", {})
    if "error" in fl:
        print("  floors ERROR", fl["error"][:300])
    for rows in (fl.get("per_rank") or [])[:1]:
        for r in rows:
            print(f"  floor {r['program']:7s} rc={r['recompute']!s:5s} L={r['n_layers']} fwd {r['fwd_s']*1e3:.2f} "
                  f"bwd {r['bwd_s']*1e3:.2f} ms ops {r['ops']}")
    for c in d["cases"]:
        if "error" in c:
            print(f"  {c['id']:44s} ERROR {c['error'][:150]}")
            continue
        hp = c.get("host_probe", {})
        def per_layer(pr):
            if not isinstance(pr, list):
                return None
            v = []
            for rows in pr:
                by = {r["n_layers"]: r for r in rows}
                lo, hi = min(by), max(by)
                v.append((by[hi]["fwd_s"] + by[hi]["bwd_s"] - by[lo]["fwd_s"] - by[lo]["bwd_s"]) / (hi - lo) * 1e3)
            return round(statistics.median(v), 3)
        print(f"  {c['id']:44s} {c['step_s'] * 1e3:8.1f} ms {c.get('peak_allocated_max_bytes', 0) / 2**30:6.2f} GiB "
              f"issue {c['issue_over_step']:.2f} probe ms/layer {per_layer(hp.get('before'))} {per_layer(hp.get('after'))}")
PY
