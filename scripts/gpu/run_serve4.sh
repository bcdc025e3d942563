#!/usr/bin/env bash
# The serve4 call (issue 25): tensor-parallel decode on 1, 2 and 4 GPUs, held-out points for the serving model's
# fixes, and the host's floor probed over and over in the same call. Every part under its own timeout.
#   A. one process per GPU, in parallel, each starting with the floor probe (bench_serve.py --mode probe):
#      GPU 0: llama8b, mha7b; GPU 1: gemma3_4b, mixtral_8l; GPU 2: dsv2lite_8l, then the kernel probe of decode
#      attention as transformers and the engine call it and of the grouped expert matmul at prefill sizes;
#      (bench_serve.py --mode arch --points heldout --adjacent-probe: new batch x context points, each eager group
#      next to a host probe); GPU 3: the 32-layer floor probe over and over while the others work (--mode hostseries).
#   B. tensor-parallel decode and prefill of the plain engine, tp 1, 2 and 4 (torchrun bench_serve_tp.py --heldout).
#   C. the floor probe again on every GPU, in parallel; D. the 32-layer probe over and over on one GPU, alone.
# Results go to a work folder packed into $OUT/serve4.tar.gz after each part and every 20 s; the log to $OUT/log.txt.
# Without a GPU: a CPU dry run at tiny sizes (--quick, gloo).   Usage: bash run_serve4.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/serve4.XXXXXX)}
BUDGET_S=${BUDGET_S:-380}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
mkdir -p "$OUT_DIR" "$WORK"
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1

el() { echo $(( $(date +%s) - T0 )); }
left() { local l=$((BUDGET_S - $(el) - ${2:-10})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/serve4.tar.gz"; }
part() { echo "== $(date -u +%T) +$(el)s $*"; }

NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz|Hypervisor)'; grep MemTotal /proc/meminfo; uname -r
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
A_END=${A_END:-140}
a_left() { local l=$((A_END - $(el))); [ "$l" -lt 5 ] && l=5; echo "$l"; }
job() {  # $1: gpu index, then what to run
  local g=$1; shift
  export CUDA_VISIBLE_DEVICES=$(vis "$g")
  timeout 60 $PY "$B" --mode probe --device "$(dev)" $Q --out "$WORK/probe_start_gpu$g.json"
  for what in "$@"; do
    case $what in
      kernels) L=$(a_left); timeout "$L" $PY "$HERE/bench_kernels.py" --device "$(dev)" $Q --deadline-s $((L - 3)) \
                 --sections decode_attention,grouped_prefill --out "$WORK/kernels4_gpu$g.json" ;;
      series) L=$(a_left); timeout "$L" $PY "$B" --mode hostseries --device "$(dev)" $Q --duration-s $((L - 15)) \
                --deadline-s $((L - 3)) --out "$WORK/hostseries_busy_gpu$g.json" ;;
      *) L=$(a_left); timeout "$L" $PY "$B" --mode arch --archs "$what" --points heldout --adjacent-probe \
           --device "$(dev)" $Q --deadline-s $((L - 5)) --out "$WORK/arch_${what//,/+}_gpu$g.json" ;;
    esac
  done
}
part "A: single-GPU parts on $NGPU GPUs"
LANES=("llama8b,mha7b" "gemma3_4b,mixtral_8l" "dsv2lite_8l kernels" "series")
if [ "$NGPU" -ge 1 ] && [ "$NGPU" -lt 4 ]; then LANES=("llama8b,mha7b gemma3_4b,mixtral_8l" "dsv2lite_8l kernels series"); fi
PIDS=()
for i in "${!LANES[@]}"; do
  job "$i" ${LANES[$i]} > "$WORK/log_gpu$i.txt" 2>&1 & PIDS+=($!)
done
wait "${PIDS[@]}"
pack
for g in "${!LANES[@]}"; do echo "--- gpu$g"; grep -vE "Warning|warn\\(" "$WORK/log_gpu$g.txt" | tail -n 25; done

part "B: tensor parallel"
NP=$([ "$NGPU" -ge 4 ] && echo 4 || echo $([ "$NGPU" -ge 2 ] && echo "$NGPU" || echo 4))
L=$(left 150 45)
unset CUDA_VISIBLE_DEVICES
timeout "$L" $PY -m torch.distributed.run --standalone --nproc_per_node "$NP" "$HERE/bench_serve_tp.py" $Q --heldout \
  --deadline-s $((L - 8)) --out "$WORK/tp.json" > "$WORK/log_tp.txt" 2>&1
grep -vE "Warning|warn\(" "$WORK/log_tp.txt" | tail -n 45
pack

part "C: floor probes again"
NP_END=$([ "$NGPU" -ge 1 ] && echo "$NGPU" || echo 4); [ "$NP_END" -gt 4 ] && NP_END=4
CPIDS=()
for g in $(seq 0 $((NP_END - 1))); do
  ( export CUDA_VISIBLE_DEVICES=$(vis "$g"); timeout "$(left 60 25)" $PY "$B" --mode probe --device "$(dev)" $Q \
      --out "$WORK/probe_end_gpu$g.json" > "$WORK/log_probe_end_gpu$g.txt" 2>&1 ) & CPIDS+=($!)
done
wait "${CPIDS[@]}"
pack

part "D: the floor probe over and over, one GPU, nothing else running"
L=$(left 30 3)
( export CUDA_VISIBLE_DEVICES=$(vis 0); timeout "$L" $PY "$B" --mode hostseries --device "$(dev)" $Q \
    --duration-s $((L - 12)) --deadline-s $((L - 2)) --out "$WORK/hostseries_alone_gpu0.json" > "$WORK/log_series_alone.txt" 2>&1 )
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
for f in sorted(glob.glob(f"{w}/hostseries_*.json")):
    d = json.load(open(f)).get("host_series", {})
    print(os.path.basename(f), len(d.get("repeats", [])), "repeats; eager ms min/median/max",
          [round(d.get(k, 0) * 1e3, 2) for k in ("eager_min_s", "eager_median_s", "eager_max_s")])
for f in sorted(glob.glob(f"{w}/arch_*.json")):
    d = json.load(open(f))
    for a, r in d["archs"].items():
        print(a, [(p["batch"], p["context"], round(p.get("eager_s", 0) * 1e3, 2), round((p.get("graph_s") or 0) * 1e3, 2),
                   p.get("error", p.get("graph_error", ""))[:20]) for p in r.get("decode", [])], r.get("error", ""))
if os.path.exists(f"{w}/tp.json"):
    d = json.load(open(f"{w}/tp.json"))
    print("tp", [(p["tp"], p["model"][:8], p.get("batch"), p.get("context"), round((p.get("graph_s") or 0) * 1e3, 2),
                  p.get("error", "")[:30]) for p in d["decode"]])
PY
