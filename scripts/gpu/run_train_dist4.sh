#!/usr/bin/env bash
# One call on a lent 4-GPU machine: scripts/gpu/train_dist.py --sweep four: the 4-GPU cases (combined layouts
# first) on all four GPUs, then, on GPUs 0 and 1, the host floors, the profiled tensor-parallel probes and three
# earlier 2-GPU cases as a baseline of this machine. Each launch first measures its baseline (bf16 matmuls,
# collectives, send/recv, host time per op). Results go to the output folder (rewritten after every case):
# machine.txt, log.txt, train_dist_w4.json, train_dist_w2.json, probe_traces.tar (compact profiler traces).
# Without a GPU it is a CPU dry run (gloo, tiny model).
#   bash scripts/gpu/run_train_dist4.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
BUDGET_S=${BUDGET_S:-500}  # the whole script ends within this many seconds
W4_START_S=${W4_START_S:-290}  # no 4-GPU case starts after this many seconds
W4_END_S=${W4_END_S:-330}  # the 4-GPU launch is killed after this many seconds
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=${TORCH_NCCL_ASYNC_ERROR_HANDLING:-3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
WORK=${WORK:-$(mktemp -d /tmp/traindist4.XXXXXX)}
mkdir -p "$OUT_DIR" "$WORK/traces"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz)'; grep MemTotal /proc/meminfo; uname -r
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
    torch.cuda.nccl.version() if torch.cuda.is_available() else None)'
  env | grep -E '^(NCCL_|TORCH_SYMM|TORCH_NCCL|NVSHMEM_|CUDA_VISIBLE|OMP_|PYTORCH_)' | sort
} > "$OUT_DIR/machine.txt" 2>&1
cat "$OUT_DIR/machine.txt"
if [ "$NGPU" -ge 1 ]; then CPU=; SWEEP="--sweep ${SWEEP_NAME:-four}"; else CPU=--cpu-tiny; SWEEP=; NGPU=4; fi
now() { echo $(( $(date +%s) - T0 )); }

launch() {  # $1: world size, $2: start no case after (s), $3: kill after (s), $4: extra flags; relaunched at most 3 times
  local w=$1 out="$OUT_DIR/train_dist_w$1.json" tries=0 rc=1 port=$((29500 + $1))
  while [ $tries -lt 4 ] && [ "$(now)" -lt "$2" ]; do
    tries=$((tries + 1))
    echo "== $(date -u +%T) +$(now)s launch $tries on $w GPUs"
    timeout -k 10 $(( $3 - $(now) )) $PY -m torch.distributed.run --nproc_per_node "$w" --master_port $port \
      "$HERE/train_dist.py" $CPU $SWEEP --baseline $4 --out "$out" --state-dir "$WORK" --trace-dir "$WORK/traces" \
      --deadline $(( T0 + $2 )) ${EXTRA:-}
    rc=$?
    echo "== launch on $w GPUs ended rc=$rc at +$(now)s"
    [ $rc -eq 0 ] && break
    port=$((port + 10))
  done
}
if [ "$NGPU" -ge 4 ]; then launch 4 "$W4_START_S" "$W4_END_S" ""; else echo "== $NGPU GPUs: no 4-GPU cases"; fi
CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 0,1 || echo "") launch 2 $((BUDGET_S - 60)) $((BUDGET_S - 15)) --floors
(cd "$WORK/traces" && tar cf "$OUT_DIR/probe_traces.tar" . ) 2>&1
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$OUT_DIR/machine.txt" 2>&1
echo "== done +$(now)s"
$PY - "$OUT_DIR" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/train_dist_w*.json")):
    d = json.load(open(f))
    e = d["environment"]
    print(f.split("/")[-1], e.get("device_name"), e.get("torch"), e.get("nccl"))
    b = d.get("baseline", {})
    if "collectives" in b:
        print("  busbw GB/s", [(c["op"], c["bytes"] >> 20, round(c["busbw_bytes_per_s"] / 1e9, 1)) for c in b["collectives"]])
        print("  matmul TFLOP/s rank0", [round(r["tflops"], 1) for r in b["matmul_bf16_per_rank"][0]])
    for c in d["cases"]:
        if "error" in c:
            print(f"  {c['id']:44s} ERROR {c['error'][:150]}")
            continue
        print(f"  {c['id']:44s} {c['step_s'] * 1e3:8.1f} ms {c.get('peak_allocated_max_bytes', 0) / 2**30:6.2f} GiB "
              f"issue {c['issue_over_step']:.2f}")
        for i, r in enumerate(c["ranks"]):
            for s in (r.get("probe") or {}).get("summary", []) if isinstance(r.get("probe"), dict) else []:
                if "wall_s" in s and "compute_busy_s" in s:
                    print(f"     r{i} {s['name']} wall {s['wall_s']*1e3:.0f} issue {s['issue_s']*1e3:.0f} "
                          f"busy {s['compute_busy_s']*1e3:.0f} nccl {s['nccl_busy_s']*1e3:.0f} "
                          f"blocked {s['host_blocked_s']*1e3:.0f} lag_med {1e3*(s['lag_median_s'] or 0):.1f}")
            if isinstance(r.get("probe"), dict) and "error" in r["probe"]:
                print("     probe error", r["probe"]["error"][:200])
PY
