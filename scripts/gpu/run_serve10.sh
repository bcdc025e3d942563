#!/usr/bin/env bash
# The serve10 call (issue 25): every point of the accuracy family `decode` (transformers `generate`, eager, static
# cache, Llama-shaped 1B and 8B, 7 points each: scripts/gpu/bench_decode.py) on one H100, in the serve9 call's protocol
# (one process per model, pinned with taskset to the vCPU scripts/gpu/pace_scan.py finds fastest just before it starts,
# scripts/gpu/pacemeter.py metering that vCPU all along; the host probe before the warm-up point, before every point and
# after the last; the first point of each process measured once and kept apart; the floor probe at the start, the middle
# and the end; the decode-attention micro-benchmark once), and now every timed generate call records its own window
# (epoch start/end, thread CPU seconds, its vCPU's /proc/stat ticks, steal included), so each point, host probe and
# floor probe is priced at the meter's readings over its own window. /proc/stat of every vCPU is kept at each part's
# start and end. Rule and blind predictions committed before the call: scripts/gpu/serve10_predictions.json.
# Every part under its own timeout; results packed into $OUT/serve10.tar.gz after each part and every 20 s.
# Without a GPU: a CPU dry run at tiny sizes (--quick).   Usage: bash run_serve10.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/serve10.XXXXXX)}
BUDGET_S=${BUDGET_S:-290}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
mkdir -p "$OUT_DIR" "$WORK"
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1

el() { echo $(( $(date +%s) - T0 )); }
left() { local l=$((BUDGET_S - $(el) - ${2:-10})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { cp "$LOG" "$WORK/run_log.txt" 2>/dev/null; tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/serve10.tar.gz"; }
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
pinned() {  # pinned NAME TIMEOUT cmd...   (as run_serve8.sh)
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
probe() { part "floor probe $1"; pinned "probe_$1" "$(left 35 5)" $PY "$D" --model probe --device "$DEV" $Q \
            --out "$WORK/probe_$1.json" > "$WORK/log_probe_$1.txt" 2>&1; tail -n 3 "$WORK/log_probe_$1.txt"; pack; }

probe start
part "decode attention micro-benchmark (repeat_kv copy rate)"
pinned attention "$(left 30 5)" $PY "$HERE/bench_attention_decode.py" --device "$DEV" $Q --out "$WORK/attention.json" \
  > "$WORK/log_attention.txt" 2>&1; tail -n 2 "$WORK/log_attention.txt"; pack
declare -A CAP=([1b]=75 [8b]=100)
for m in 1b 8b; do
  part "generate decode $m (one process, pinned, every point, host probe beside every point, first point apart)"
  L=$(left "${CAP[$m]}" 30)
  pinned "$m" "$L" $PY "$D" --model "$m" --host-probe --device "$DEV" $Q --deadline-s $((L - 20)) \
    --out "$WORK/decode_$m.json" > "$WORK/log_decode_$m.txt" 2>&1
  grep -E "^$m " "$WORK/log_decode_$m.txt" | cut -c1-220
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
    print(os.path.basename(f), d["env"].get("cpu_affinity"), "host probe ms", [round(x * 1e3, 2) for x in hp])
    print("  first", round(d.get("warmup_discarded", {}).get("decode_step_s", 0) * 1e3, 2),
          [(p["batch"], p.get("max_cache_len"), round(p.get("decode_step_s", 0) * 1e3, 2), p.get("error", "")[:20])
           for p in d.get("points", [])])
for f in sorted(glob.glob(f"{w}/pace_*.txt")):
    xs = [float(l.split()[1]) / float(l.split()[2]) for l in open(f) if not l.startswith("#") and len(l.split()) == 3
          and float(l.split()[2]) > 0]
    if xs:
        xs.sort()
        print(os.path.basename(f), len(xs), "samples, k runs/s p10/p50/p90", round(xs[len(xs) // 10] / 1e3),
              round(xs[len(xs) // 2] / 1e3), round(xs[9 * len(xs) // 10] / 1e3))
PY
