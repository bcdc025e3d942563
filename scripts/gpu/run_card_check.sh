#!/usr/bin/env bash
# One call on a lent machine checks the book's predictions for its card, every part under its own timeout:
#   1. the five collectives over every GPU (run_collectives.sh), then over GPUs 0,1 when there are more than 2;
#   2. one process per GPU, in parallel: decode on GPU 0 (floor probes twice, decode attention, the 1B model),
#      decode of the 8B model on GPU 1, Hugging Face training (train_hf.py part 0/2 and its floors, then
#      machine_rates.py and fp32_rates.py) on GPU 2 and part 1/2 and its floors on GPU 3. With 2 GPUs the
#      training runs on GPUs 0 and 1 after the decode; with 1 GPU everything runs one after another.
# Results go to a work folder (layout: machine.txt, net/, net-2of<N>/, decode/, train-hf/) that is packed into
# $OUT/results.tar.gz after each part and every 20 s, so a run cut short still returns what it made; the log
# goes to $OUT/log.txt. Without a GPU it is a CPU dry run at tiny sizes (gloo collectives, --quick decode,
# --cpu-tiny training).
# Run from a folder that holds the mlcalc package and scripts/gpu:  bash scripts/gpu/run_card_check.sh "$OUT"
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0, as preset on the lent machines).
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
WORK=${WORK:-$(mktemp -d /tmp/cardcheck.XXXXXX)}
BUDGET_S=${BUDGET_S:-540}  # the whole script ends within this many seconds
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
PY=${PY:-python3}
T0=$(date +%s)
mkdir -p "$OUT_DIR" "$WORK"/{net,decode,train-hf/train_hf}
LOG="$OUT_DIR/log.txt"
exec > >(tee -a "$LOG") 2>&1

left() { local l=$((BUDGET_S - ($(date +%s) - T0) - 15)); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }
pack() { tar czf "$WORK.tgz" -C "$WORK" . 2>/dev/null && cp "$WORK.tgz" "$OUT_DIR/results.tar.gz"; }
part() { echo "== $(date -u +%T) +$(( $(date +%s) - T0 ))s $*"; }

NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1; nvidia-smi topo -m 2>&1; nvidia-smi nvlink -s 2>&1 | head -40
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz)'; grep MemTotal /proc/meminfo; uname -r
  $PY -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
    torch.cuda.nccl.version() if torch.cuda.is_available() else None, "transformers", transformers.__version__)'
  env | grep -E '^(NCCL_|TORCH_SYMM|NVSHMEM_|CUDA_VISIBLE)' | sort
} > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
pack
(while sleep 20; do pack; done) & PACKER=$!
trap 'kill $PACKER 2>/dev/null; pack' EXIT

# 1. collectives (nothing else runs meanwhile)
if [ "$NGPU" -ne 1 ]; then  # one GPU: nothing to measure (none: a gloo dry run on the CPU)
  part "collectives over all $NGPU GPUs"
  timeout "$(left 150)" bash scripts/gpu/run_collectives.sh "$WORK/net"
fi
if [ "$NGPU" -gt 2 ]; then
  part "collectives over GPUs 0,1 of $NGPU"
  mkdir -p "$WORK/net-2of$NGPU"
  CUDA_VISIBLE_DEVICES=0,1 timeout "$(left 150)" bash scripts/gpu/run_collectives.sh "$WORK/net-2of$NGPU"
fi
pack

# 2. decode and training, one process per GPU
if [ "$NGPU" -ge 1 ]; then DEV=cuda:0; Q=; TINY=; else DEV=cpu; Q=--quick; TINY=--cpu-tiny; fi
gpu() { [ "$NGPU" -ge 1 ] && echo $(( $1 < NGPU ? $1 : $1 % NGPU )) || echo ""; }
decode0() {
  export CUDA_VISIBLE_DEVICES=$(gpu 0)
  for p in probe probe_repeat; do
    timeout "$(left 60)" $PY scripts/gpu/bench_decode.py --model probe --device $DEV $Q --out "$WORK/decode/$p.json"
  done
  timeout "$(left 90)" $PY scripts/gpu/bench_attention_decode.py --device $DEV $Q --out "$WORK/decode/attention.json"
  timeout "$(left 200)" $PY scripts/gpu/bench_decode.py --model 1b --device $DEV $Q --out "$WORK/decode/decode_1b.json"
}
decode1() {
  export CUDA_VISIBLE_DEVICES=$(gpu 1)
  timeout "$(left 300)" $PY scripts/gpu/bench_decode.py --model 8b --device $DEV $Q --out "$WORK/decode/decode_8b.json"
}
train() {  # $1: part index (0 or 1), $2: GPU
  export CUDA_VISIBLE_DEVICES=$2
  local T="$WORK/train-hf/train_hf" S=; [ -n "$TINY" ] && S="--steps 1 --warmup 1"
  timeout "$(left 240)" $PY scripts/gpu/train_hf.py --part "$1/2" $TINY $S --out "$T/train_hf_part$1.json"
  timeout "$(left 120)" $PY scripts/gpu/train_hf.py --part "$1/2" --floor $TINY $S --out "$T/floor_part$1.json"
  if [ "$1" = 0 ] && [ "$NGPU" -ge 1 ]; then
    timeout "$(left 150)" $PY scripts/gpu/machine_rates.py --out "$T/rates.json"
    timeout "$(left 60)" $PY scripts/gpu/fp32_rates.py --out "$T/fp32_rates.json" > /dev/null
  fi
}
part "decode and training on $NGPU GPUs"
if [ "$NGPU" -ge 4 ]; then
  decode0 > "$WORK/decode/log0.txt" 2>&1 & A=$!
  decode1 > "$WORK/decode/log1.txt" 2>&1 & B=$!
  train 0 2 > "$WORK/train-hf/log0.txt" 2>&1 & C=$!
  train 1 3 > "$WORK/train-hf/log1.txt" 2>&1 & D=$!
  wait $A $B $C $D
elif [ "$NGPU" -ge 2 ]; then
  decode0 > "$WORK/decode/log0.txt" 2>&1 & A=$!
  decode1 > "$WORK/decode/log1.txt" 2>&1 & B=$!
  wait $A $B; pack
  train 0 0 > "$WORK/train-hf/log0.txt" 2>&1 & C=$!
  train 1 1 > "$WORK/train-hf/log1.txt" 2>&1 & D=$!
  wait $C $D
else  # one GPU or none: one after another
  decode0 > "$WORK/decode/log0.txt" 2>&1; pack
  decode1 > "$WORK/decode/log1.txt" 2>&1; pack
  train 0 "$(gpu 0)" > "$WORK/train-hf/log0.txt" 2>&1; pack
  train 1 "$(gpu 0)" > "$WORK/train-hf/log1.txt" 2>&1
fi
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$WORK/machine.txt" 2>&1
for f in "$WORK"/decode/log*.txt "$WORK"/train-hf/log*.txt; do echo "--- $f"; tail -n 25 "$f"; done
part "done"
pack
# short table last (the reply carries the end of the output)
$PY - "$WORK" <<'PY'
import glob, json, os, sys
w = sys.argv[1]
for f in sorted(glob.glob(f"{w}/net*/collectives.json")):
    d = json.load(open(f))
    print(os.path.basename(os.path.dirname(f)), d["env"].get("device_name"), d["env"].get("world_size"),
          {op: round(max(r["busbw_gbps"] for r in v["sweep"]), 1) for op, v in d["results"].items()})
for f in sorted(glob.glob(f"{w}/decode/decode_*.json")):
    d = json.load(open(f))
    print(os.path.basename(f), d["env"].get("device_name"),
          [(p["batch"], p["prompt_tokens"], round(p.get("decode_tokens_per_s", 0), 1)) for p in d.get("points", [])])
for f in sorted(glob.glob(f"{w}/decode/probe*.json")):
    d = json.load(open(f))
    print(os.path.basename(f), round(d["read_bandwidth"]["bytes_per_s"] / 1e12, 3), "TB/s read",
          [round(o["decode_step_s"] * 1e3, 2) for o in d["overhead"]], "ms (2, 8, 32 layers)")
for f in sorted(glob.glob(f"{w}/train-hf/train_hf/*_part*.json")):
    d = json.load(open(f))
    print(os.path.basename(f), [(c["model"]["name"][:12], c["batch"], c["seq_len"], int(c["recompute"]),
                                 round(c["step_s"] * 1e3, 1) if "step_s" in c else c.get("error", "")[:40])
                                for c in d["cases"]])
PY
