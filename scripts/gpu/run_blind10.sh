#!/usr/bin/env bash
# The blind10 call (session 35, issues 24 and 25): shapes the book never measured, predicted before the call
# (scripts/gpu/blind10_predictions.json, scripts/gpu/predict_blind10.py). One 2-GPU machine:
#   1. both GPUs: scripts/gpu/train_dist.py --sweep blind10 (FSDP2, tensor parallel, 1F1B pipeline on 2 GPUs);
#   2. then side by side, one process a GPU:
#      GPU 0: scripts/gpu/train_hf.py --sweep blind10 (1-GPU Hugging Face training), its floor (Llama-3.2 1B at
#             1 x 64 tokens, the engine's host constants), then bench_serve.py --mode arch --points blind10 for
#             gemma3_4b (eager, CUDA graph, prefill; host probe beside every timing group);
#      GPU 1: bench_decode.py's floor probe, generate decode of the 1B and 8B at new points (host probe beside
#             every point, first point apart), bench_serve.py's floor probe and llama8b at its blind10 points, the
#             generate floor probe again.
# Each part under its own timeout; results in $OUT/blind10.tar.gz (packed after each part) and $OUT/log.txt.
# Without a GPU: a CPU dry run (tiny models, gloo).
#   bash scripts/gpu/run_blind10.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/blind10.XXXXXX)}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=3 OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} TOKENIZERS_PARALLELISM=false
export TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
DIST_END=${DIST_END:-150}   # the 2-GPU launch is killed after this many seconds
SIDE_S=${SIDE_S:-250}      # each GPU's side-by-side lane ends within this many seconds after that
mkdir -p "$OUT_DIR" "$WORK"
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1
pin() { [ "$1" -lt "$(nproc --all)" ] && echo "taskset -c $1"; }  # a vCPU to pin to, where there is one
el() { echo $(( $(date +%s) - T0 )); }
pack() { tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/blind10.tar.gz"; }
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU cpus $(nproc --all)"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz|Hypervisor)'; grep MemTotal /proc/meminfo
  $PY -c 'import torch, transformers, sys; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "nccl", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-",
    "transformers", transformers.__version__, "python", sys.version.split()[0])'
} > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
pack
(while sleep 20; do pack; done) & PACKER=$!
trap 'kill $PACKER 2>/dev/null; pack' EXIT
if [ "$NGPU" -ge 2 ]; then CPU=; Q=; D0=cuda:0; D1=cuda:1; else CPU=--cpu-tiny; Q=--quick; D0=cpu; D1=cpu; fi

echo "== $(date -u +%T) +$(el)s 2 GPUs: train_dist --sweep blind10"
timeout -k 5 $((DIST_END - $(el))) $PY -m torch.distributed.run --nproc_per_node 2 --master_port 29811 \
  "$HERE/train_dist.py" $CPU --sweep blind10 --warmup 2 --steps 5 --case-budget-s 14 \
  --out "$WORK/train_dist_w2.json" --state-dir "$WORK/state" --deadline $((T0 + DIST_END - 20)) \
  > "$WORK/log_train_dist.txt" 2>&1
echo "   rc $?"; grep -E "^w2-|ERROR" "$WORK/log_train_dist.txt" | cut -c1-220
pack
T1=$(date +%s)
left() { local l=$((T1 + SIDE_S - $(date +%s) - ${2:-5})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }

lane0() {
  export CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 0 || echo "")
  local d=$([ -z "$CPU" ] && echo cuda:0 || echo cpu)
  echo "== $(date -u +%T) +$(el)s GPU 0: train_hf --sweep blind10"
  if [ -z "$CPU" ]; then
    timeout -k 5 "$(left 130 100)" $PY "$HERE/train_hf.py" --sweep blind10 --warmup 2 --steps 5 \
      --out "$WORK/train_hf_blind10.json" > "$WORK/log_train_hf.txt" 2>&1
    echo "   train_hf rc $?"; pack
    timeout -k 5 "$(left 40 80)" $PY "$HERE/train_hf.py" --floor --models "Llama-3.2 1B" \
      --out "$WORK/train_hf_floor.json" > "$WORK/log_train_hf_floor.txt" 2>&1
    echo "   train_hf floor rc $?"; pack
  else
    $PY "$HERE/train_hf.py" --cpu-tiny --sweep blind10 --out "$WORK/train_hf_blind10.json" > "$WORK/log_train_hf.txt" 2>&1
    echo "   train_hf (cpu tiny) rc $?"
  fi
  echo "== $(date -u +%T) +$(el)s GPU 0: bench_serve gemma3_4b blind10"
  timeout -k 5 "$(left 100 5)" $(pin 5) $PY "$HERE/bench_serve.py" --mode arch --archs gemma3_4b --points blind10 \
    --adjacent-probe --device "$d" $Q --deadline-s "$(left 95 10)" --out "$WORK/arch_gemma3_4b.json" \
    > "$WORK/log_arch_gemma.txt" 2>&1
  echo "   gemma rc $?"; pack
}
lane1() {
  export CUDA_VISIBLE_DEVICES=$([ -z "$CPU" ] && echo 1 || echo "")
  local d=$([ -z "$CPU" ] && echo cuda:0 || echo cpu)
  local D="$HERE/bench_decode.py" S="$HERE/bench_serve.py"
  echo "== $(date -u +%T) +$(el)s GPU 1: decode floor probe (start)"
  timeout -k 5 "$(left 40 5)" $(pin 9) $PY "$D" --model probe --device "$d" $Q --out "$WORK/probe_start.json" \
    > "$WORK/log_probe_start.txt" 2>&1; echo "   rc $?"
  for m in 1b 8b; do
    P=$([ $m = 1b ] && echo 4x1024,48x1024,2x8192 || echo 4x1024,24x2048,2x8192)
    echo "== $(date -u +%T) +$(el)s GPU 1: generate decode $m $P"
    timeout -k 5 "$(left 60 90)" $(pin 9) $PY "$D" --model $m --points "$P" --host-probe --device "$d" $Q \
      --deadline-s $([ $m = 1b ] && echo 35 || echo 50) --out "$WORK/decode_$m.json" > "$WORK/log_decode_$m.txt" 2>&1
    echo "   rc $?"; grep -E "^$m " "$WORK/log_decode_$m.txt" | cut -c1-200; pack
  done
  echo "== $(date -u +%T) +$(el)s GPU 1: bench_serve probe + llama8b blind10"
  timeout -k 5 "$(left 25 5)" $(pin 9) $PY "$S" --mode probe --device "$d" $Q --out "$WORK/probe_serve.json" \
    > "$WORK/log_probe_serve.txt" 2>&1; echo "   rc $?"
  timeout -k 5 "$(left 100 30)" $(pin 9) $PY "$S" --mode arch --archs llama8b --points blind10 --adjacent-probe \
    --device "$d" $Q --deadline-s "$(left 95 35)" --out "$WORK/arch_llama8b.json" > "$WORK/log_arch_llama.txt" 2>&1
  echo "   llama8b rc $?"; pack
  echo "== $(date -u +%T) +$(el)s GPU 1: decode floor probe (end)"
  timeout -k 5 "$(left 30 1)" $(pin 9) $PY "$D" --model probe --device "$d" $Q --out "$WORK/probe_end.json" \
    > "$WORK/log_probe_end.txt" 2>&1; echo "   rc $?"; pack
}
lane0 > "$WORK/lane0.txt" 2>&1 &
L0=$!
lane1 > "$WORK/lane1.txt" 2>&1 &
L1=$!
wait $L0 $L1
cat "$WORK/lane0.txt" "$WORK/lane1.txt"
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$WORK/machine.txt" 2>&1
echo "== $(date -u +%T) +$(el)s done"
pack
