#!/usr/bin/env bash
# The five collectives over every GPU of the machine (torchrun + NCCL), NVLink multicast off.
# Run from a folder that holds the mlcalc package:  bash scripts/gpu/run_collectives.sh "$OUT"
set -u -o pipefail
OUT_DIR=${1:?out}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
NGPU=$(python3 -c 'import torch; print(torch.cuda.device_count())')
{ date -u; nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink -s 2>&1 | head -40
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
} > "$OUT_DIR/machine.txt" 2>&1
if [ "$NGPU" -ge 2 ]; then NP=$NGPU; BK=nccl; else NP=2; BK=gloo; fi
timeout 240 torchrun --standalone --nproc_per_node="$NP" -m mlcalc.bench collectives --backend $BK \
  --ops all_reduce,all_gather,reduce_scatter,all_to_all,send_recv --no-progress --out "$OUT_DIR/collectives.json" > "$OUT_DIR/log.txt" 2>&1
echo "rc=$?" >> "$OUT_DIR/log.txt"
python3 - "$OUT_DIR/collectives.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["env"].get("devices") or d["env"])
for op, v in d["results"].items():
    print(op, [(r["bytes"] >> 20, round(r["busbw_gbps"], 1), r["correct"]) for r in v["sweep"] if r["bytes"] >= 2**24])
PY
