#!/bin/bash
# small17: blind check of the protocol law on points lat16 did not run (3 x 2^k sizes; 3 GPUs), lat16's case points as
# the baseline in the same call. Usage: bash run_small17.sh OUT_DIR   (on the 4-GPU machine; NVLink multicast stays off)
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
  timeout 200 torchrun --nproc_per_node=$NP --log-dir "$TMP/$name" --redirects 3 "$HERE/small17_bench.py" "$@" > "$TMP/$name.out" 2>&1
  echo "$name rc=$? $(date -u +%T)" >> "$OUT/log.txt"
}
echo "start $(date -u +%T) gpus=$NG np=$NP" > "$OUT/log.txt"
# 1. NCCL's log on (its per-call 'Bytes -> Algo' lines are written at capture only): what it picked at each point
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING run logged --out "$OUT/graph_logged.json" --budget-s 150
R0=$(find "$TMP/logged" -path '*/0/stdout.log' | head -1)
python3 "$HERE/lat16_parse.py" "$R0" "$OUT/tuning.json" "$OUT/tuning_tables.txt" >> "$OUT/log.txt" 2>&1
# 2. the scored times: NCCL's defaults, log off (lat16's rule)
run scored --out "$OUT/graph.json" --budget-s 150
for f in "$TMP"/*.out; do echo "== $f"; tail -20 "$f"; done >> "$OUT/log.txt"
for d in logged scored; do for r in $(find "$TMP/$d" -name 'std*.log' 2>/dev/null); do echo "== $r"; grep -v "Bytes -> Algo" "$r" | grep -v "NCCL INFO" | tail -20; done; done >> "$OUT/log.txt"
tar czf "$OUT/raw_logs.tar.gz" -C "$TMP" . 2>/dev/null
ls -la "$OUT" >> "$OUT/log.txt"
