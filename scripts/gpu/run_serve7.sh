#!/usr/bin/env bash
# The serve7 call (issue 25): the eager decode and prefill points that missed in the first two serving calls (no host
# probe next to them), with passing controls, measured again on one GPU with the host probe (a tiny 8-layer Llama
# eager step) timed before every timing group and after the last (5 groups a point), one process per architecture
# (its first decode point measured once and kept apart), the floor probe at the start, the middle and the end of the
# call (the host's spread), and transformers `generate` decode of the Llama-shaped 1B and 8B at batch 1 (the first
# point of each process kept apart: the two `decode` misses were the first point of their process).
# Every part under its own timeout; results packed into $OUT/serve7.tar.gz after each part and every 20 s.
# Without a GPU: a CPU dry run at tiny sizes (--quick).   Usage: bash run_serve7.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/serve7.XXXXXX)}
BUDGET_S=${BUDGET_S:-520}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
mkdir -p "$OUT_DIR" "$WORK"
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1

el() { echo $(( $(date +%s) - T0 )); }
left() { local l=$((BUDGET_S - $(el) - ${2:-10})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/serve7.tar.gz"; }
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
trap 'kill $PACKER 2>/dev/null; pack' EXIT

if [ "$NGPU" -ge 1 ]; then Q=; DEV=cuda:0; export CUDA_VISIBLE_DEVICES=0; else Q=--quick; DEV=cpu; fi
B="$HERE/bench_serve.py"
probe() { part "floor probe $1"; timeout "$(left 60 5)" $PY "$B" --mode probe --device "$DEV" $Q \
            --out "$WORK/probe_$1_gpu0.json" > "$WORK/log_probe_$1.txt" 2>&1; tail -n 2 "$WORK/log_probe_$1.txt"; pack; }

probe start
# seconds each architecture may take (gemma3_4b has 8 decode points, mixtral_8l 3)
declare -A CAP=([llama8b]=70 [mha7b]=70 [gemma3_4b]=90 [mixtral_8l]=55 [dsv2lite_8l]=70)
for arch in llama8b mha7b gemma3_4b mixtral_8l dsv2lite_8l; do
  part "arch $arch (one process, misses + controls, host probe next to every group)"
  L=$(left "${CAP[$arch]}" 75)
  timeout "$L" $PY "$B" --mode arch --archs "$arch" --points misses --adjacent-probe --groups 5 --device "$DEV" $Q \
    --deadline-s $((L - 5)) --out "$WORK/arch_${arch}_gpu0.json" > "$WORK/log_$arch.txt" 2>&1
  grep -vE "Warning|warn\(" "$WORK/log_$arch.txt" | tail -n 20
  pack
  [ "$arch" = gemma3_4b ] && probe middle
done

part "generate decode, Llama-shaped 1B and 8B, batch 1 (first point of each process kept apart)"
for m in 8b 1b; do
  if [ -n "$Q" ]; then PTS=""; else PTS="--points 1x512,1x4096"; fi
  timeout "$(left 40 35)" $PY "$HERE/bench_decode.py" --model "$m" --device "$DEV" $Q $PTS \
    --out "$WORK/decode_$m.json" > "$WORK/log_decode_$m.txt" 2>&1
  grep -E "^$m " "$WORK/log_decode_$m.txt" | tail -n 4
  pack
done
timeout "$(left 40 25)" $PY "$HERE/bench_decode.py" --model probe --device "$DEV" $Q --out "$WORK/decode_probe.json" \
  > "$WORK/log_decode_probe.txt" 2>&1
pack

probe end
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$WORK/machine.txt" 2>&1
part "done"
pack
$PY - "$WORK" <<'PY'
import glob, json, os, sys
w = sys.argv[1]
for f in sorted(glob.glob(f"{w}/probe_*.json")):
    d = json.load(open(f)); p = d.get("probe", {})
    print(os.path.basename(f), d["env"].get("device_name"),
          round(p.get("read_bandwidth", {}).get("bytes_per_s", 0) / 1e12, 3), "TB/s",
          round(p.get("matmul", {}).get("flops_per_s", 0) / 1e12), "TFLOP/s",
          [(t.get("n_layers"), round(t.get("eager_s", 0) * 1e3, 2), round((t.get("graph_s") or 0) * 1e3, 3))
           for t in p.get("tiny_llama", [])])
for f in sorted(glob.glob(f"{w}/arch_*.json")):
    d = json.load(open(f))
    hp = [x["s"] for x in d.get("host_probe", {}).get("samples", [])]
    if hp:
        print("host probe", len(hp), "samples, ms min/max", round(min(hp) * 1e3, 2), round(max(hp) * 1e3, 2))
    for a, r in d["archs"].items():
        print(a, "first", round(r.get("warmup_discarded", {}).get("eager_s", 0) * 1e3, 2),
              [(p["batch"], p["context"], round(p.get("eager_s", 0) * 1e3, 2), round((p.get("graph_s") or 0) * 1e3, 2),
                p.get("error", "")[:20]) for p in r.get("decode", [])],
              [(p["batch"], p["prompt"], round(p.get("prefill_s", 0) * 1e3, 2)) for p in r.get("prefill", [])],
              r.get("error", ""))
for f in sorted(glob.glob(f"{w}/decode_*.json")):
    d = json.load(open(f))
    w0 = d.get("warmup_discarded", {})
    print(os.path.basename(f), "first", round(w0.get("decode_step_s", 0) * 1e3, 2),
          [(p.get("batch"), p.get("max_cache_len"), round(p.get("decode_step_s", 0) * 1e3, 2)) for p in d.get("points", [])])
PY
