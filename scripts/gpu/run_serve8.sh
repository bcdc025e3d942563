#!/usr/bin/env bash
# The serve8 call (issue 25): EVERY eager decode and prefill point the serving calls measured (the first calls' 8 decode
# and 5 prefill points per architecture and the serve4 call's 5 and 3: 65 decode, 40 prefill), all in one protocol:
# one process per architecture, pinned (taskset) to the vCPU that scripts/gpu/pace_scan.py finds fastest just before it
# starts, with scripts/gpu/pacemeter.py metering that vCPU's pace all along; the host probe (a tiny 8-layer Llama eager
# step) timed before every timing group and after the last (5 groups a point); the first decode point of each process
# measured once and kept apart; each point's CUDA-graph replay beside it; the floor probe at the start, the middle and
# the end of the call (the host's spread). Predictions committed before the call: scripts/gpu/serve8_predictions.json.
# Every part under its own timeout; results packed into $OUT/serve8.tar.gz after each part and every 20 s.
# Without a GPU: a CPU dry run at tiny sizes (--quick).   Usage: bash run_serve8.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/serve8.XXXXXX)}
BUDGET_S=${BUDGET_S:-560}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
mkdir -p "$OUT_DIR" "$WORK"
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1

el() { echo $(( $(date +%s) - T0 )); }
left() { local l=$((BUDGET_S - $(el) - ${2:-10})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { cp "$LOG" "$WORK/run_log.txt" 2>/dev/null; tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/serve8.tar.gz"; }
part() { echo "== $(date -u +%T) +$(el)s $*"; }

NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz|Hypervisor)'; grep MemTotal /proc/meminfo; uname -r
  $PY -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "transformers", transformers.__version__)'
} > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
pack
(while sleep 20; do pack; done) & PACKER=$!
trap 'kill $PACKER 2>/dev/null; touch "$WORK/pacemeter.stop"; pack' EXIT

if [ "$NGPU" -ge 1 ]; then Q=; DEV=cuda:0; export CUDA_VISIBLE_DEVICES=0; else Q=--quick; DEV=cpu; fi
B="$HERE/bench_serve.py"
# pin: the fastest vCPU now; its pace metered while the program runs (pace_<name>_c<cpu>.txt)
pinned() {  # pinned NAME TIMEOUT cmd...
  local name=$1 to=$2; shift 2
  local cpu; cpu=$($PY "$HERE/pace_scan.py" "$WORK/scan_$name.json" 2>>"$WORK/scan_log.txt" | tail -n 1)
  [[ "$cpu" =~ ^[0-9]+$ ]] || cpu=$(nproc --all 2>/dev/null | awk '{print $1 - 1}')
  echo "   $name on vCPU $cpu ($(tail -n 1 "$WORK/scan_log.txt"))"
  rm -f "$WORK/pacemeter.stop"
  $PY "$HERE/pacemeter.py" "$WORK/pace_${name}_c$cpu.txt" "$cpu" "$to" & local pm=$!
  timeout "$to" taskset -c "$cpu" "$@"; local rc=$?
  touch "$WORK/pacemeter.stop"; wait "$pm" 2>/dev/null
  return $rc
}
probe() { part "floor probe $1"; pinned "probe_$1" "$(left 60 5)" $PY "$B" --mode probe --device "$DEV" $Q \
            --out "$WORK/probe_$1_gpu0.json" > "$WORK/log_probe_$1.txt" 2>&1; tail -n 2 "$WORK/log_probe_$1.txt"; pack; }

probe start
# seconds each architecture may take (13 decode and 8 prefill points each; gemma3_4b and the MoE models are slower)
declare -A CAP=([llama8b]=95 [mha7b]=95 [gemma3_4b]=110 [mixtral_8l]=90 [dsv2lite_8l]=90)
for arch in llama8b mha7b gemma3_4b mixtral_8l dsv2lite_8l; do
  part "arch $arch (one process, pinned, every point, host probe next to every group)"
  L=$(left "${CAP[$arch]}" 40)
  pinned "$arch" "$L" $PY "$B" --mode arch --archs "$arch" --points all --adjacent-probe --groups 5 --device "$DEV" $Q \
    --deadline-s $((L - 5)) --out "$WORK/arch_${arch}_gpu0.json" > "$WORK/log_$arch.txt" 2>&1
  grep -vE "Warning|warn\(" "$WORK/log_$arch.txt" | tail -n 24
  pack
  [ "$arch" = gemma3_4b ] && probe middle
done

probe end
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$WORK/machine.txt" 2>&1
part "done"
pack
$PY - "$WORK" <<'PY'
import glob, json, os, sys
w = sys.argv[1]
for f in sorted(glob.glob(f"{w}/probe_*.json")):
    d = json.load(open(f)); p = d.get("probe", {})
    print(os.path.basename(f), d["env"].get("device_name"), d["env"].get("cpu_affinity"),
          round(p.get("read_bandwidth", {}).get("bytes_per_s", 0) / 1e12, 3), "TB/s",
          round(p.get("matmul", {}).get("flops_per_s", 0) / 1e12), "TFLOP/s",
          [(t.get("n_layers"), round(t.get("eager_s", 0) * 1e3, 2), round((t.get("graph_s") or 0) * 1e3, 3))
           for t in p.get("tiny_llama", [])])
for f in sorted(glob.glob(f"{w}/arch_*.json")):
    d = json.load(open(f))
    hp = [x["s"] for x in d.get("host_probe", {}).get("samples", [])]
    if hp:
        print("host probe", d["env"].get("cpu_affinity"), len(hp), "samples, ms min/max", round(min(hp) * 1e3, 2),
              round(max(hp) * 1e3, 2))
    for a, r in d["archs"].items():
        print(a, "first", round(r.get("warmup_discarded", {}).get("eager_s", 0) * 1e3, 2),
              [(p["batch"], p["context"], round(p.get("eager_s", 0) * 1e3, 1), round((p.get("graph_s") or 0) * 1e3, 1),
                p.get("error", "")[:12]) for p in r.get("decode", [])],
              [(p["batch"], p["prompt"], round(p.get("prefill_s", 0) * 1e3, 1)) for p in r.get("prefill", [])],
              r.get("error", ""))
for f in sorted(glob.glob(f"{w}/pace_*.txt")):
    xs = [float(l.split()[1]) / float(l.split()[2]) for l in open(f) if not l.startswith("#") and len(l.split()) == 3
          and float(l.split()[2]) > 0]
    if xs:
        xs.sort()
        print(os.path.basename(f), len(xs), "samples, k runs/s p10/p50/p90", round(xs[len(xs) // 10] / 1e3),
              round(xs[len(xs) // 2] / 1e3), round(xs[9 * len(xs) // 10] / 1e3))
PY
