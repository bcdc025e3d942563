#!/usr/bin/env bash
# One call on a lent 2-GPU machine runs every benchmark the book shows:
#   matmul sweep and copy bandwidth on GPU 0, collectives over both GPUs (torchrun + NCCL),
#   then the training-step sweep on GPU 0. Results land in $OUT (or $1) as JSON, with a log.
# Run from a folder that holds the mlcalc package:  bash scripts/gpu/run_all.sh "$OUT"
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0 is preset on the lent machines; we keep it).
set -u -o pipefail
OUT_DIR=${1:-${OUT:?give an output folder}}
ONLY=${ONLY:-matmul,bandwidth,collectives,shapes,attention,train}
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
LOG="$OUT_DIR/log.txt"
NGPU=$(python3 -c 'import torch; print(torch.cuda.device_count())')
{
  date -u; nvidia-smi; nvidia-smi topo -m
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
} > "$OUT_DIR/machine.txt" 2>&1
case ",$ONLY," in *,matmul,*)
  CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m mlcalc.bench matmul --dtypes bf16,fp8 --out "$OUT_DIR/matmul.json" 2>&1 | tee -a "$LOG"
  nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >> "$OUT_DIR/machine.txt" 2>&1 ;;
esac
case ",$ONLY," in *,bandwidth,*)
  CUDA_VISIBLE_DEVICES=0 timeout 60 python3 -m mlcalc.bench bandwidth --out "$OUT_DIR/bandwidth.json" 2>&1 | tee -a "$LOG" ;;
esac
case ",$ONLY," in *,collectives,*)
  if [ "$NGPU" -ge 2 ]; then NP=$NGPU; BK=nccl; else NP=2; BK=gloo; fi  # CPU dry run: 2 gloo ranks
  timeout 100 torchrun --standalone --nproc_per_node="$NP" -m mlcalc.bench collectives --backend $BK --out "$OUT_DIR/collectives.json" 2>&1 | tee -a "$LOG" ;;
esac
case ",$ONLY," in *,shapes,*)  # the matmul shapes of the training cases, for the step-time prediction
  CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m mlcalc.bench matmul --dtypes bf16 --target-s 0.05 --confirm-top 1 --sustain-s 1.0 \
    --gpt-shapes gpt2-124M:8:1024,gpt2-124M:16:1024,gpt2-350M:8:1024,gpt2-774M:8:1024,gpt2-1.5B:4:1024,gpt2-1.5B:8:1024 \
    --out "$OUT_DIR/matmul_train_shapes.json" 2>&1 | tee -a "$LOG" ;;
esac
case ",$ONLY," in *,attention,*)
  CUDA_VISIBLE_DEVICES=0 timeout 60 python3 -m mlcalc.bench attention --out "$OUT_DIR/attention.json" 2>&1 | tee -a "$LOG" ;;
esac
case ",$ONLY," in *,train,*)
  CUDA_VISIBLE_DEVICES=0 timeout ${TRAIN_TIMEOUT:-220} python3 -m mlcalc.bench train ${TRAIN_ARGS:-} --out "$OUT_DIR/train.json" 2>&1 | tee -a "$LOG" ;;
esac
python3 scripts/gpu/summary.py "$OUT_DIR"
