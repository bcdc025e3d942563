#!/bin/bash
# lat16: small-message collective latency, eager and in CUDA graphs, NCCL protocols and torch's one-shot kernel.
# Usage: bash run_lat16.sh OUT_DIR   (on the 4-GPU machine; NVLink multicast stays off)
set -u
OUT=${1:?out dir}
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NG=$(nvidia-smi -L | wc -l)
NP=$(( NG >= 4 ? 4 : 2 ))
TMP=$(mktemp -d)
{ date -u; nvidia-smi; nvidia-smi topo -m; nproc; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'; } > "$OUT/machine.txt" 2>&1
run() {  # name, then bench args
  local name=$1; shift
  timeout 260 torchrun --nproc_per_node=$NP --log-dir "$TMP/$name" --redirects 3 "$HERE/lat16_bench.py" "$@" > "$TMP/$name.out" 2>&1
  echo "$name rc=$?" >> "$OUT/log.txt"
}
echo "start $(date -u +%T) gpus=$NG np=$NP" > "$OUT/log.txt"
# 1. graphs under the four NCCL_PROTO settings, NCCL's tuning log on (its per-call lines are written at capture only)
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING run graph --part nccl --modes graph --out "$OUT/nccl_graph.json" --budget-s 200
echo "graph done $(date -u +%T)" >> "$OUT/log.txt"
R0=$(find "$TMP/graph" -path '*/0/stdout.log' | head -1)
python3 "$HERE/lat16_parse.py" "$R0" "$OUT/tuning.json" "$OUT/tuning_tables.txt" >> "$OUT/log.txt" 2>&1
# 2. eager and graph, NCCL's defaults, no log (a log line per eager call would slow the host)
run eager --part nccl --modes eager,graph --protos unset --out "$OUT/nccl_eager.json" --budget-s 100
echo "eager done $(date -u +%T)" >> "$OUT/log.txt"
# 3. torch's symmetric-memory one-shot / two-shot all-reduce
run symm --part symm --out "$OUT/symm.json" --budget-s 90
echo "symm done $(date -u +%T)" >> "$OUT/log.txt"
for f in "$TMP"/*.out; do echo "== $f"; tail -30 "$f"; done >> "$OUT/log.txt"
for d in graph eager symm; do for r in $(find "$TMP/$d" -name 'std*.log' 2>/dev/null); do echo "== $r"; grep -v "Bytes -> Algo" "$r" | grep -v "NCCL INFO" | tail -20; done; done >> "$OUT/log.txt"
tar czf "$OUT/raw_logs.tar.gz" -C "$TMP" . 2>/dev/null
ls -la "$OUT" >> "$OUT/log.txt"
