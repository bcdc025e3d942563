"""fp32 matmul rates (plain F.linear, TF32 off as PyTorch defaults) and the experts implementation
transformers picks for a Mixtral-shaped model. python scripts/gpu/fp32_rates.py --out fp32.json"""
import json, sys, time, statistics, argparse
import torch, transformers
sys.path.insert(0, "scripts/gpu")
from machine_rates import _time
ap = argparse.ArgumentParser(); ap.add_argument("--out", required=True); a = ap.parse_args()
F = torch.nn.functional
res = {"torch": torch.__version__, "transformers": transformers.__version__,
       "device_name": torch.cuda.get_device_properties(0).name,
       "allow_tf32": torch.backends.cuda.matmul.allow_tf32, "matmul_fp32": [], "grouped_mm_fp32": []}
for m, n, k in [(512, 14336, 4096), (512, 4096, 14336), (4096, 4096, 4096), (8192, 8192, 8192), (1024, 28672, 4096), (2048, 2048, 2048)]:
    x = torch.randn(m, k, device="cuda"); w = torch.randn(n, k, device="cuda")
    t = _time(torch, lambda: F.linear(x, w)); res["matmul_fp32"].append({"m": m, "n": n, "k": k, "s": t, "tflops": 2*m*n*k/t/1e12})
for E, rows, n, k in [(8, 512, 28672, 4096), (8, 512, 4096, 14336)]:
    x = torch.randn(E * rows, k, device="cuda"); w = torch.randn(E, n, k, device="cuda")
    offs = torch.arange(1, E + 1, device="cuda", dtype=torch.int32) * rows
    try:
        t = _time(torch, lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs))
        res["grouped_mm_fp32"].append({"experts": E, "rows": rows, "n": n, "k": k, "s": t, "tflops": 2*E*rows*n*k/t/1e12})
    except Exception as e:
        res["grouped_mm_fp32"].append({"error": str(e)[:300]})
cfg = transformers.AutoConfig.for_model("mixtral", vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
      num_attention_heads=4, num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2)
with torch.device("cuda"):
    mdl = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
res["experts_implementation"] = str(getattr(mdl.config, "_experts_implementation", None))
json.dump(res, open(a.out, "w"), indent=1); print(json.dumps(res, indent=1))
