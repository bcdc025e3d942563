"""Bytes one RMSNorm moves forward and in its autograd backward, per element, as transformers' modules run it
(LlamaRMSNorm of an fp32 input, Qwen3RMSNorm and Gemma3RMSNorm of a bf16 input, Gemma3RMSNorm of an fp32 input;
fp32 weight, bf16 autocast), counted on the CPU with scripts/gpu/count_train_bytes.py's dispatch mode (every
op's inputs read and outputs written): rows 128 wide, 4096 rows. The step-time engine charges a backward twice its
forward (steptime.BACKWARD_OVER_FORWARD); issue 24.

    python scripts/gpu/count_norm_bytes.py > scripts/gpu/count_norm_bytes.json   (needs torch and transformers)
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.argv = sys.argv[:1] + ["-"]
src = open(os.path.join(HERE, "count_train_bytes.py")).read().replace("\nmain()\n", "\n")
ns = {"__file__": os.path.join(HERE, "count_train_bytes.py"), "__name__": "count_train_bytes"}
exec(compile(src, "count_train_bytes.py", "exec"), ns)
Count = ns["Count"]
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRMSNorm  # noqa: E402
from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm  # noqa: E402
out = {"torch": torch.__version__, "transformers": transformers.__version__, "width": 128, "rows": 4096,
       "unit": "bytes per element (read + written)", "norms": {}}
for name, cls, dt in (("llama_fp32_in", LlamaRMSNorm, torch.float32), ("qwen3_bf16_in", Qwen3RMSNorm, torch.bfloat16),
                      ("gemma3_bf16_in", Gemma3RMSNorm, torch.bfloat16), ("gemma3_fp32_in", Gemma3RMSNorm, torch.float32)):
    w, rows = 128, 4096
    m = cls(w)
    x = torch.randn(rows, w, dtype=dt, requires_grad=True)
    cf, cb = Count(), Count()
    with cf:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = m(x)
    g = torch.ones_like(y)
    with cb:
        torch.autograd.grad(y, [x, m.weight], g)
    n = rows * w
    out["norms"][name] = {"forward": {k: round(v / n, 2) for k, v in cf.bytes.items()}, "backward": {k: round(v / n, 2) for k, v in cb.bytes.items()},
                 "fwd_total": round(sum(cf.bytes.values()) / n, 2), "bwd_total": round(sum(cb.bytes.values()) / n, 2), "out": str(y.dtype)}
print(json.dumps(out, indent=1))
