#!/usr/bin/env bash
# The serve13 call (issue 25): the 14 points of the accuracy family `decode` (transformers `generate`, eager, static
# cache, Llama-shaped 1B and 8B, 7 points each: scripts/gpu/bench_decode.py) on one H100, each point measured in 3
# ROUNDS in its process (the first round in the script's order, the next two shuffled with a fixed seed), a point's
# record the median of its rounds, every round's value kept. Otherwise serve10's protocol: one process per model, pinned
# with taskset to the vCPU scripts/gpu/pace_scan.py finds fastest just before it starts, scripts/gpu/pacemeter.py
# metering that vCPU all along; the host probe (8-layer tiny model) before the warm-up point, before every point of
# every round and after the last; the first point of each process measured once and kept apart; the floor probe at
# the start, the middle and the end; the decode-attention micro-benchmark once; every timed generate call's window.
# New: the host's side of every forward of every timed generate call (a forward pre-hook and hook, perf_counter),
# kept beside the step time. Predictions, record rule and the cause rule committed before the call:
# scripts/gpu/serve13_predictions.json. Every part under its own timeout, BUDGET_S in all; results packed into
# $OUT/serve13.tar.gz after each part and every 20 s. Without a GPU: a CPU dry run at tiny sizes (--quick).
# Usage: bash run_serve13.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/serve13.XXXXXX)}
BUDGET_S=${BUDGET_S:-540}
ROUNDS=${ROUNDS:-3}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
mkdir -p "$OUT_DIR" "$WORK"
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1

el() { echo $(( $(date +%s) - T0 )); }
left() { local l=$((BUDGET_S - $(el) - ${2:-10})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { cp "$LOG" "$WORK/run_log.txt" 2>/dev/null; tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/serve13.tar.gz"; }
part() { echo "== $(date -u +%T) +$(el)s $*"; { echo "== $(date +%s.%N) $*"; cat /proc/stat 2>/dev/null | grep ^cpu; } >> "$WORK/proc_stat.txt"; }

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
D="$HERE/bench_decode.py"
pinned() {  # pinned NAME TIMEOUT cmd...   (as run_serve10.sh)
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
probe() { part "floor probe $1"; pinned "probe_$1" "$(left 40 5)" $PY "$D" --model probe --device "$DEV" $Q \
            --forward-times --out "$WORK/probe_$1.json" > "$WORK/log_probe_$1.txt" 2>&1
          tail -n 3 "$WORK/log_probe_$1.txt" | cut -c1-300; pack; }

probe start
part "decode attention micro-benchmark (repeat_kv copy rate)"
pinned attention "$(left 30 5)" $PY "$HERE/bench_attention_decode.py" --device "$DEV" $Q --out "$WORK/attention.json" \
  > "$WORK/log_attention.txt" 2>&1; tail -n 2 "$WORK/log_attention.txt" | cut -c1-300; pack
# caps from serve10's logs: one round took 1B 34 s, 8B 73 s of process wall (+ ~18 s of start and scan each)
declare -A CAP=([1b]=130 [8b]=255)
for m in 1b 8b; do
  part "generate decode $m ($ROUNDS rounds in one process, pinned, host probe beside every point, first point apart)"
  [ "$m" = 1b ] && L=$(left "${CAP[$m]}" 300) || L=$(left "${CAP[$m]}" 45)
  pinned "$m" "$L" $PY "$D" --model "$m" --host-probe --forward-times --rounds "$ROUNDS" --device "$DEV" $Q \
    --deadline-s $((L - 25)) --out "$WORK/decode_$m.json" > "$WORK/log_decode_$m.txt" 2>&1
  echo "   rc $?"; grep -E "^$m " "$WORK/log_decode_$m.txt" | cut -c1-200
  pack
  [ "$m" = 1b ] && probe middle
done
probe end
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$WORK/machine.txt" 2>&1
part "done"
pack
$PY - "$WORK" <<'PY'
import glob, json, os, sys
w = sys.argv[1]
for f in sorted(glob.glob(f"{w}/probe_*.json")):
    d = json.load(open(f))
    print(os.path.basename(f), d["env"].get("device_name"), d["env"].get("cpu_affinity"),
          round(d.get("read_bandwidth", {}).get("bytes_per_s", 0) / 1e12, 3), "TB/s",
          [(o["n_layers"], round(o["decode_step_s"] * 1e3, 2)) for o in d.get("overhead", [])])
for f in sorted(glob.glob(f"{w}/decode_*.json")):
    d = json.load(open(f))
    hp = [x["s"] for x in d.get("host_probe", {}).get("samples", [])]
    print(os.path.basename(f), d["env"].get("cpu_affinity"), "wall", round(d.get("wall_s", 0)), "host probe ms",
          round(min(hp) * 1e3, 2) if hp else None, "-", round(max(hp) * 1e3, 2) if hp else None)
    print("  first", round(d.get("warmup_discarded", {}).get("decode_step_s", 0) * 1e3, 2))
    for p in d.get("points", []):
        print("  ", p["batch"], p.get("max_cache_len"), "median", round(p.get("decode_step_s", 0) * 1e3, 2),
              "rounds", [round(x * 1e3, 2) for x in p.get("rounds_decode_step_s", [])],
              "host/fwd", [round(x * 1e3, 2) if x == x and x is not None else None
                           for x in p.get("rounds_host_forward_s", [])], p.get("error", "")[:30])
for f in sorted(glob.glob(f"{w}/pace_*.txt")):
    xs = [float(l.split()[1]) / float(l.split()[2]) for l in open(f) if not l.startswith("#") and len(l.split()) == 3
          and float(l.split()[2]) > 0]
    if xs:
        xs.sort()
        print(os.path.basename(f), len(xs), "samples, k runs/s p10/p50/p90", round(xs[len(xs) // 10] / 1e3),
              round(xs[len(xs) // 2] / 1e3), round(xs[9 * len(xs) // 10] / 1e3))
PY
