#!/usr/bin/env bash
# The serve12 call (issue 25): torch.profiler (CPU + CUDA) over a few eager decode steps of the Llama-shaped 1B at
# the decode record's one miss (batch 16, 4,096-token prompt: cache 4,129) and its neighbours (16 x 512, 1 x 4,096),
# then the miss point again (repeatability), in one process pinned with taskset to the vCPU scripts/gpu/pace_scan.py
# finds fastest (as serve10), scripts/gpu/pacemeter.py metering it. Each trace is reduced on the machine
# (scripts/gpu/profile_decode.py); results and gzipped traces packed into $OUT/serve12.tar.gz after the run.
# Without a GPU: a CPU dry run at tiny sizes (--quick).   Usage: bash run_serve12.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?give an output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/serve12.XXXXXX)}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 TOKENIZERS_PARALLELISM=false
export TRANSFORMERS_VERBOSITY=error
PY=${PY:-python3}
TO=${TO:-200}
mkdir -p "$OUT_DIR" "$WORK/prof"
exec > >(tee -a "$OUT_DIR/log.txt") 2>&1
pack() { cp "$OUT_DIR/log.txt" "$WORK/run_log.txt" 2>/dev/null; tar czf "$OUT_DIR/serve12.tar.gz" -C "$WORK" . 2>/dev/null; }
NGPU=$($PY -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
{ date -u; echo "gpus $NGPU"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Socket|CPU max MHz|Hypervisor)'; uname -r
  $PY -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "transformers", transformers.__version__)'
} > "$WORK/machine.txt" 2>&1
cat "$WORK/machine.txt"
if [ "$NGPU" -ge 1 ]; then Q=; DEV=cuda:0; PTS=16x512,16x4096,1x4096,16x4096; export CUDA_VISIBLE_DEVICES=0
else Q=--quick; DEV=cpu; PTS=2x16,1x32; fi
cpu=$($PY "$HERE/pace_scan.py" "$WORK/scan.json" 2>>"$WORK/scan_log.txt" | tail -n 1)
[[ "$cpu" =~ ^[0-9]+$ ]] || cpu=$(nproc --all 2>/dev/null | awk '{print $1 - 1}')
echo "profile on vCPU $cpu ($(tail -n 1 "$WORK/scan_log.txt"))"
rm -f "$WORK/pacemeter.stop"
$PY "$HERE/pacemeter.py" "$WORK/pace_c$cpu.txt" "$cpu" "$TO" & PM=$!
timeout "$TO" taskset -c "$cpu" $PY "$HERE/profile_decode.py" --model 1b --points "$PTS" --device "$DEV" $Q \
  --steps 8 --deadline-s $((TO - 60)) --out "$WORK/prof"
echo "rc $?"
touch "$WORK/pacemeter.stop"; wait "$PM" 2>/dev/null
gzip -f "$WORK"/prof/trace_*.json 2>/dev/null
cp "$WORK/prof/result.json" "$OUT_DIR/result.json" 2>/dev/null
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE >> "$WORK/machine.txt" 2>&1
pack
ls -la "$OUT_DIR" "$WORK/prof"
