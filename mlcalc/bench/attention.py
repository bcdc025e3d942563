"""Attention kernel throughput: ``F.scaled_dot_product_attention`` forward and forward+backward.

FLOP convention (causal): forward ``2 b s^2 h`` (two products, half the score matrix), backward
2.5 times the forward (Dao 2023, FlashAttention-2), with ``h = heads x head_dim``. The rate is
what :func:`mlcalc.gpt_program.program_step_time` takes as ``attention_flops_per_s``.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from mlcalc import _check
from mlcalc.bench import _common


def default_cases(device_type: str) -> list[tuple[int, int, int, int]]:
    """(batch, heads, seq_len, head_dim) cases: the training benchmark's models, or a tiny one on CPU."""
    if device_type == "cuda":
        return [(8, 12, 1024, 64), (16, 12, 1024, 64), (4, 12, 2048, 64), (8, 16, 1024, 64), (4, 16, 2048, 64),
                (8, 20, 1024, 64), (4, 20, 2048, 64), (4, 25, 1024, 64), (8, 25, 1024, 64), (2, 25, 2048, 64)]
    return [(2, 2, 64, 16)]


def attention_flop(batch: int, heads: int, seq_len: int, head_dim: int, backward: bool) -> float:
    """Causal attention FLOP: forward 2 b s^2 (heads x head_dim); with backward 3.5 times that."""
    for name, v in (("batch", batch), ("heads", heads), ("seq_len", seq_len), ("head_dim", head_dim)):
        _check.positive_int(name, v)
    fwd = 2.0 * batch * seq_len * seq_len * heads * head_dim
    return fwd * (3.5 if backward else 1.0)


def run_attention(
    cases: Iterable[Sequence[int]] | None = None,
    device: str | None = None,
    repeats: int = 20,
    progress: bool = True,
) -> dict[str, Any]:
    """Time causal SDPA in bf16 (fp32 on CPU) for each (batch, heads, seq_len, head_dim)."""
    torch = _common.import_torch()
    _check.positive_int("repeats", repeats)
    dev = _common.pick_device(torch, device)
    case_list = [tuple(c) for c in cases] if cases is not None else default_cases(dev.type)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    F = torch.nn.functional
    env = _common.environment(torch, dev)
    bar = _common.Progress(len(case_list), "attention", enabled=progress)
    rows = []
    for case in case_list:
        if len(case) != 4:
            raise ValueError(f"cases={case!r} is not allowed: each case is (batch, heads, seq_len, head_dim)")
        b, a, s, d = (_check.positive_int(n, v) for n, v in zip(("batch", "heads", "seq_len", "head_dim"), case))
        gen = torch.Generator(device=dev).manual_seed(b * 1000 + s)
        q, k, v = (torch.randn(b, a, s, d, device=dev, dtype=dtype, generator=gen).requires_grad_() for _ in range(3))
        grad = torch.randn(b, a, s, d, device=dev, dtype=dtype, generator=gen)

        def fwd(q: Any = q, k: Any = k, v: Any = v) -> Any:  # this case's tensors, bound now
            with torch.no_grad():
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def fwd_bwd(q: Any = q, k: Any = k, v: Any = v, grad: Any = grad) -> None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.autograd.grad(out, (q, k, v), grad)

        t_f = _common.summary(_common.time_calls(torch, dev, fwd, repeats=repeats, warmup=3))
        t_fb = _common.summary(_common.time_calls(torch, dev, fwd_bwd, repeats=repeats, warmup=3))
        rows.append({"batch": b, "heads": a, "seq_len": s, "head_dim": d,
                     "fwd_s": t_f["median_s"], "fwd_bwd_s": t_fb["median_s"],
                     "fwd_tflops": attention_flop(b, a, s, d, False) / t_f["median_s"] / 1e12,
                     "fwd_bwd_tflops": attention_flop(b, a, s, d, True) / t_fb["median_s"] / 1e12})
        bar.update(f"b={b} a={a} s={s} d={d} fwd+bwd {rows[-1]['fwd_bwd_tflops']:.1f} TFLOPS")
    params = {"dtype": str(dtype).replace("torch.", ""), "causal": True, "repeats": repeats,
              "flop": "forward 2*b*s^2*heads*head_dim (causal); forward+backward 3.5x forward"}
    return _common.result("attention", env, params, {"cases": rows})
