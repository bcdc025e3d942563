#!/usr/bin/env bash
# The blind10b call (session 35): the 1-GPU parts of run_blind10.sh on ONE H100 (the card a reader is likeliest to
# have; the blind10 call got H200s), one after another on the one GPU (no lane beside another): train_hf.py --sweep
# blind10 and its Llama-3.2 1B floor; the generate floor probe (start), bench_decode.py's blind10 points of the 1B and
# 8B (host probe beside every point); bench_serve.py's probe and Llama 3 8B at its blind10 points (ARCHS to add gemma3_4b)
# (host probe beside every timing group). Predictions for this card were committed
# before the blind10 call (scripts/gpu/blind10_predictions.json, "NVIDIA H100 80GB HBM3" rows). Each part under its
# own timeout, BUDGET_S in all; results in $OUT/blind10b.tar.gz (packed after each part) and $OUT/log.txt.
#   bash scripts/gpu/run_blind10b.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/blind10b.XXXXXX)}
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
T0=$(date +%s)
BUDGET_S=${BUDGET_S:-290}
mkdir -p "$OUT_DIR" "$WORK"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
el() { echo $(( $(date +%s) - T0 )); }
left() { local l=$((BUDGET_S - $(el) - ${2:-5})); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/blind10b.tar.gz"; }
pin() { [ "$1" -lt "$(nproc --all)" ] && echo "taskset -c $1"; }
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU cpus $(nproc --all)"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz|Hypervisor)'; grep MemTotal /proc/meminfo
  $PY -c 'import torch, transformers, sys; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "transformers", transformers.__version__, "python", sys.version.split()[0])'
} > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
pack
if [ "$NGPU" -ge 1 ]; then Q=; d=cuda:0; export CUDA_VISIBLE_DEVICES=0; else Q=--quick; d=cpu; fi
D="$HERE/bench_decode.py" S="$HERE/bench_serve.py"
echo "== $(date -u +%T) +$(el)s train_hf --sweep blind10"
if [ -z "$Q" ]; then
  timeout -k 5 "$(left 75 215)" $PY "$HERE/train_hf.py" --sweep blind10 --warmup 2 --steps 5 \
    --out "$WORK/train_hf_blind10.json" > "$WORK/log_train_hf.txt" 2>&1; echo "   rc $?"
  timeout -k 5 "$(left 20 195)" $PY "$HERE/train_hf.py" --floor --models "Llama-3.2 1B" \
    --out "$WORK/train_hf_floor.json" > "$WORK/log_train_hf_floor.txt" 2>&1; echo "   floor rc $?"
else
  $PY "$HERE/train_hf.py" --cpu-tiny --sweep blind10 --out "$WORK/train_hf_blind10.json" > "$WORK/log_train_hf.txt" 2>&1
  echo "   (cpu tiny) rc $?"
fi
cat "$WORK/log_train_hf.txt" | grep -E " ms | error|Error" | cut -c1-200; pack
echo "== $(date -u +%T) +$(el)s generate floor probe (start)"
timeout -k 5 "$(left 25 170)" $(pin 9) $PY "$D" --model probe --device "$d" $Q --out "$WORK/probe_start.json" \
  > "$WORK/log_probe_start.txt" 2>&1; echo "   rc $?"
for m in 1b 8b; do
  P=$([ $m = 1b ] && echo 4x1024,48x1024,2x8192 || echo 4x1024,24x2048,2x8192)
  echo "== $(date -u +%T) +$(el)s generate decode $m $P"
  timeout -k 5 "$(left $([ $m = 1b ] && echo 40 || echo 50) $([ $m = 1b ] && echo 135 || echo 85))" $(pin 9) $PY "$D" --model $m --points "$P" \
    --host-probe --device "$d" $Q --deadline-s $([ $m = 1b ] && echo 28 || echo 33) --out "$WORK/decode_$m.json" > "$WORK/log_decode_$m.txt" 2>&1
  echo "   rc $?"; grep -E "^$m " "$WORK/log_decode_$m.txt" | cut -c1-200; pack
done
echo "== $(date -u +%T) +$(el)s bench_serve probe, llama8b and gemma3_4b blind10"
timeout -k 5 "$(left 20 65)" $(pin 9) $PY "$S" --mode probe --device "$d" $Q --out "$WORK/probe_serve.json" \
  > "$WORK/log_probe_serve.txt" 2>&1; echo "   rc $?"
timeout -k 5 "$(left 65 3)" $(pin 9) $PY "$S" --mode arch --archs ${ARCHS:-llama8b} --points blind10 --adjacent-probe --groups 2 \
  --device "$d" $Q --deadline-s "$(left 60 8)" --out "$WORK/arch_serve.json" > "$WORK/log_arch.txt" 2>&1
echo "   rc $?"; grep -E "decode|prefill" "$WORK/log_arch.txt" | cut -c1-160; pack
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$WORK/machine.txt" 2>&1
echo "== $(date -u +%T) +$(el)s done"
pack
