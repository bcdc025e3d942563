#!/usr/bin/env bash
# One call on a lent 4-GPU machine measures serving (issue 25's evidence), every part under its own timeout:
#   A. one process per GPU, in parallel (each starts and ends with the floor probe, bench_serve.py --mode probe,
#      then runs the kernel probe, bench_kernels.py: decode-shape matmuls, prefill attention, element-wise passes):
#      GPU 0: llama8b; GPU 1: mha7b, gemma3_4b; GPU 2: mixtral_8l, dsv2lite_8l (bench_serve.py --mode arch);
#      GPU 3: the generate-based floor probe of bench_decode.py (as in earlier runs), then the load test
#      (bench_serve.py --mode load);
#   B. tensor-parallel decode/prefill on 1, 2 and 4 GPUs (torchrun bench_serve_tp.py);
#   C. the floor probe again on every GPU, in parallel.
# Results go to a work folder packed into $OUT/serve.tar.gz after each part and every 20 s; the log to $OUT/log.txt.
# Without a GPU: a CPU dry run at tiny sizes (--quick, gloo).
# Run from scripts/gpu's parent's parent or anywhere:  bash scripts/gpu/run_serve.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/serve.XXXXXX)}
BUDGET_S=${BUDGET_S:-515}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
mkdir -p "$OUT_DIR" "$WORK"
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1

left() { local l=$((BUDGET_S - ($(date +%s) - T0) - ${2:-10})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/serve.tar.gz"; }
part() { echo "== $(date -u +%T) +$(( $(date +%s) - T0 ))s $*"; }

NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz)'; grep MemTotal /proc/meminfo; uname -r
  $PY -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
    torch.cuda.nccl.version() if torch.cuda.is_available() else None, "transformers", transformers.__version__)'
  env | grep -E '^(NCCL_|TORCH_SYMM|NVSHMEM_|CUDA_VISIBLE)' | sort
} > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
pack
(while sleep 20; do pack; done) & PACKER=$!
trap 'kill $PACKER 2>/dev/null; pack' EXIT

if [ "$NGPU" -ge 1 ]; then Q=; else Q=--quick; fi
dev() { [ "$NGPU" -ge 1 ] && echo "cuda:0" || echo cpu; }
vis() { [ "$NGPU" -ge 1 ] && echo $(( $1 % NGPU )) || echo ""; }
B="$HERE/bench_serve.py"

# A. single-GPU parts, one process per GPU; each bounded by its own deadline and a timeout
A_END=${A_END:-$([ "$NGPU" -ge 4 ] && echo 290 || echo 300)}   # phase A ends by this many seconds after the start
a_left() { local l=$((A_END - ($(date +%s) - T0))); [ "$l" -lt 5 ] && l=5; echo "$l"; }
job() {  # $1: gpu index, $2: name, then the arch list or a mode
  local g=$1 name=$2; shift 2
  export CUDA_VISIBLE_DEVICES=$(vis "$g")
  timeout 90 $PY "$B" --mode probe --device "$(dev)" $Q --out "$WORK/probe_start_gpu$g.json"
  timeout 85 $PY "$HERE/bench_kernels.py" --device "$(dev)" $Q --deadline-s 75 --out "$WORK/kernels_gpu$g.json"
  for what in "$@"; do
    case $what in
      gen_probe) timeout 60 $PY "$HERE/bench_decode.py" --model probe --device "$(dev)" $Q --out "$WORK/genprobe_gpu$g.json" ;;
      load) L=$(a_left); timeout "$L" $PY "$B" --mode load --device "$(dev)" $Q --deadline-s $((L - 5)) --out "$WORK/load_gpu$g.json" ;;
      *) L=$(a_left); timeout "$L" $PY "$B" --mode arch --archs "$what" --device "$(dev)" $Q --deadline-s $((L - 5)) \
           --out "$WORK/arch_${what//,/+}_gpu$g.json" ;;
    esac
  done
}
part "A: single-GPU parts on $NGPU GPUs"
if [ "$NGPU" -ge 4 ] || [ "$NGPU" -eq 0 ]; then  # four lanes (none: a CPU dry run of the same four)
  LANES=("llama8b" "mha7b gemma3_4b" "mixtral_8l dsv2lite_8l" "gen_probe load")
else  # two GPUs (or three): two lanes, the same work
  LANES=("llama8b mha7b gemma3_4b" "mixtral_8l dsv2lite_8l gen_probe load")
fi
PIDS=()
for i in "${!LANES[@]}"; do
  job "$i" "a$i" ${LANES[$i]} > "$WORK/log_gpu$i.txt" 2>&1 & PIDS+=($!)
done
wait "${PIDS[@]}"
pack
for g in "${!LANES[@]}"; do echo "--- gpu$g"; grep -vE "Warning|warn\\(" "$WORK/log_gpu$g.txt" | tail -n 30; done

# B. tensor parallel
part "B: tensor parallel"
NP=$([ "$NGPU" -ge 4 ] && echo 4 || echo $([ "$NGPU" -ge 2 ] && echo "$NGPU" || echo 4))  # 3 GPUs: tp 1, 2
L=$(left 170 60)
unset CUDA_VISIBLE_DEVICES
timeout "$L" $PY -m torch.distributed.run --standalone --nproc_per_node "$NP" "$HERE/bench_serve_tp.py" $Q \
  --deadline-s $((L - 10)) --out "$WORK/tp.json" > "$WORK/log_tp.txt" 2>&1
grep -vE "Warning|warn\(" "$WORK/log_tp.txt" | tail -n 40
pack

# C. the floor probe again on every GPU, in parallel
part "C: floor probes again"
NP_END=$([ "$NGPU" -ge 1 ] && echo "$NGPU" || echo 4); [ "$NP_END" -gt 4 ] && NP_END=4
CPIDS=()
for g in $(seq 0 $((NP_END - 1))); do
  ( export CUDA_VISIBLE_DEVICES=$(vis "$g"); timeout "$(left 90 3)" $PY "$B" --mode probe --device "$(dev)" $Q \
      --out "$WORK/probe_end_gpu$g.json" > "$WORK/log_probe_end_gpu$g.txt" 2>&1 ) & CPIDS+=($!)
done
wait "${CPIDS[@]}"  # not a bare wait: the packer loop runs in the background until the end
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
    for a, r in d["archs"].items():
        print(a, [(p["batch"], p["context"], round(p.get("eager_s", 0) * 1e3, 2), round((p.get("graph_s") or 0) * 1e3, 2),
                   p.get("error", p.get("graph_error", ""))[:20]) for p in r.get("decode", [])], r.get("error", ""))
for f in sorted(glob.glob(f"{w}/load_*.json")):
    d = json.load(open(f))
    for r in d.get("load", {}).get("runs", []):
        print("load", r.get("rate"), r.get("n_finished"), "/", r.get("n_requests"), "ttft p50/p99",
              r.get("ttft_p50_s"), r.get("ttft_p99_s"), "tpot p50/p99", r.get("tpot_p50_s"), r.get("tpot_p99_s"))
if os.path.exists(f"{w}/tp.json"):
    d = json.load(open(f"{w}/tp.json"))
    print("tp", [(p["tp"], p["model"][:8], p.get("batch"), round(p.get("eager_s", 0) * 1e3, 2),
                  round((p.get("graph_s") or 0) * 1e3, 2)) for p in d["decode"]])
PY
