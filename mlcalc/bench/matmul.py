"""Maximum achievable matmul throughput: time C = A @ B over a sweep of shapes, keep the best.

FLOP of one (m x k) @ (k x n) product: 2*m*n*k (a multiply and an add per term). The sweep always
holds the reference shape (8192 x 8192 x 8192 by default), and the best shapes are re-timed with
the reference at the end, interleaved, so "best" and "reference" come from the same conditions.
The idea follows Stas Bekman's Maximum Achievable Matmul FLOPS finder (ml-engineering,
compute/accelerator/benchmarks); the code is ours.
"""

from __future__ import annotations

import itertools
import random
import statistics
import time
from typing import Any, Iterable, Sequence

from mlcalc import _check
from mlcalc.bench import _common

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
Shape = tuple[int, int, int]

# The GPU sweep: M and N from 2048 to 16384, K from 2048 to 16384 (144 shapes).
GPU_MN = (2048, 4096, 6144, 8192, 12288, 16384)
GPU_K = (2048, 4096, 8192, 16384)
REFERENCE: Shape = (8192, 8192, 8192)


def default_shapes(device_type: str) -> list[Shape]:
    """The sweep used on a GPU, or a tiny one on a CPU (for tests and a quick look)."""
    if device_type == "cuda":
        return [(m, n, k) for m, n, k in itertools.product(GPU_MN, GPU_MN, GPU_K)]
    return [(m, n, k) for m, n, k in itertools.product((64, 128), (64, 128), (64, 128))]


def matmul_flop(m: int, n: int, k: int) -> float:
    """Floating-point operations of one (m x k) @ (k x n) product: 2*m*n*k."""
    for name, v in (("m", m), ("n", n), ("k", k)):
        _check.positive_int(name, v)
    return 2.0 * m * n * k


def fp8_supported(torch: Any, device: Any) -> str | None:
    """None if fp8 matmuls run here, else the reason they do not."""
    if device.type != "cuda":
        return "fp8 matmul needs a CUDA device"
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return f"torch {torch.__version__} has no torch._scaled_mm"
    cap = torch.cuda.get_device_capability(device)
    if cap < (8, 9):
        return f"compute capability {cap[0]}.{cap[1]} < 8.9 has no fp8 tensor cores"
    return None


def _make_op(torch: Any, device: Any, dtype: str, m: int, n: int, k: int) -> Any:
    """A no-argument callable that runs one product of the shape in ``dtype`` (fresh random inputs)."""
    gen = torch.Generator(device=device).manual_seed(m * 31 + n * 7 + k)
    if dtype == "fp8":
        a = torch.randn(m, k, device=device, generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device, generator=gen).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.ones((), device=device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    tdt = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    a = torch.randn(m, k, device=device, dtype=tdt, generator=gen)
    b = torch.randn(k, n, device=device, dtype=tdt, generator=gen)
    c = torch.empty(m, n, device=device, dtype=tdt)
    return lambda: torch.mm(a, b, out=c)


def _as_shape(s: Sequence[int]) -> Shape:
    """(m, n, k) from any sequence of three positive whole numbers, or a ValueError naming it."""
    if len(s) != 3:
        raise ValueError(f"shapes={s!r} is not allowed: each shape is (m, n, k)")
    m, n, k = (_check.positive_int(name, v) for name, v in zip("mnk", s))
    return (m, n, k)


def parse_shape(text: str) -> Shape:
    """A shape as the command line writes it: "8192x4096x4096" -> (8192, 4096, 4096)."""
    try:
        return _as_shape([int(v) for v in text.lower().split("x")])
    except ValueError:
        raise ValueError(f"shape={text!r} is not allowed: write it MxNxK, e.g. 8192x8192x8192") from None


def _time_shape(torch: Any, device: Any, dtype: str, shape: Shape, target_s: float,
                min_repeats: int, max_repeats: int) -> dict[str, Any]:
    m, n, k = shape
    op = _make_op(torch, device, dtype, m, n, k)
    first = _common.time_calls(torch, device, op, repeats=1, warmup=2)[0]
    repeats = int(min(max(target_s / max(first, 1e-9), min_repeats), max_repeats))
    times = _common.time_calls(torch, device, op, repeats=repeats, warmup=1)
    stats = _common.summary(times)
    flop = matmul_flop(m, n, k)
    return {"m": m, "n": n, "k": k, **stats,
            "tflops_median": flop / stats["median_s"] / 1e12,
            "tflops_mean": flop / stats["mean_s"] / 1e12,
            "tflops_max": flop / stats["min_s"] / 1e12}


def _confirm_shape(torch: Any, device: Any, dtype: str, shape: Shape, idle_s: float,
                   sustain_s: float) -> dict[str, Any]:
    """Burst (after an idle pause) and sustained (after continuous load) TFLOPS of one shape."""
    m, n, k = shape
    flop = matmul_flop(m, n, k)
    op = _make_op(torch, device, dtype, m, n, k)
    one = _common.time_calls(torch, device, op, repeats=1, warmup=2)[0]
    _common.synchronize(torch, device)
    time.sleep(idle_s)
    burst_n = int(min(max(0.02 / max(one, 1e-9), 5), 100))  # about 20 ms of products
    burst = _common.time_calls(torch, device, op, repeats=burst_n, warmup=1)
    t_end = time.perf_counter() + sustain_s
    while time.perf_counter() < t_end:  # keep the card busy, then time the tail
        _common.time_calls(torch, device, op, repeats=max(burst_n, 5), warmup=0)
    sustained = _common.time_calls(torch, device, op, repeats=max(2 * burst_n, 10), warmup=0)
    return {"m": m, "n": n, "k": k,
            "tflops_burst": flop / statistics.median(burst) / 1e12,
            "tflops_burst_max": flop / min(burst) / 1e12,
            "tflops_sustained": flop / statistics.median(sustained) / 1e12,
            "burst_repeats": len(burst), "sustained_repeats": len(sustained),
            "idle_s": idle_s, "sustain_s": sustain_s}


def run_matmul(
    dtypes: Sequence[str] = ("bf16", "fp8"),
    shapes: Iterable[Shape] | None = None,
    reference: Shape | None = None,
    device: str | None = None,
    target_s_per_shape: float = 0.08,
    confirm_top: int = 6,
    idle_s: float = 1.0,
    sustain_s: float = 1.5,
    shuffle_seed: int | None = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Sweep matmul shapes for each dtype; return the JSON-ready result.

    For each dtype: every shape is timed, in a shuffled order (``shuffle_seed``; None keeps the
    given order) so that no shape gains from a cool, idle card, with the median over repeats that
    fill about ``target_s_per_shape`` seconds. Then the ``confirm_top`` best shapes and the
    reference shape are confirmed one by one: after ``idle_s`` seconds idle, a short burst of
    products gives ``tflops_burst`` (what the card reaches before its power limit bites, the
    Maximum Achievable Matmul FLOPS); after ``sustain_s`` seconds of continuous products,
    ``tflops_sustained`` (what a long training run sees). "best" is the highest burst figure,
    "best_sustained" the highest sustained one. A dtype that cannot run here (fp8 off a Hopper or
    Ada GPU) is recorded as skipped.
    """
    torch = _common.import_torch()
    for d in dtypes:
        _check.choice("dtype", d, DTYPES)
    _check.positive("target_s_per_shape", target_s_per_shape)
    _check.positive_int("confirm_top", confirm_top)
    _check.non_negative("idle_s", idle_s)
    _check.non_negative("sustain_s", sustain_s)
    dev = _common.pick_device(torch, device)
    shape_list = [_as_shape(s) for s in shapes] if shapes is not None else default_shapes(dev.type)
    if reference is None:  # 8192^3 on a GPU; a small square on a CPU
        reference = REFERENCE if dev.type == "cuda" else (128, 128, 128)
    reference = _as_shape(reference)
    if reference not in shape_list:
        shape_list.append(reference)

    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(shape_list)
    env = _common.environment(torch, dev)
    results: dict[str, Any] = {}
    for dtype in dtypes:
        if dtype == "fp8" and (why := fp8_supported(torch, dev)):
            results[dtype] = {"skipped": why}
            continue
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        try:
            bar = _common.Progress(len(shape_list), f"matmul {dtype}", enabled=progress)
            sweep = []
            best_so_far = 0.0
            for shape in shape_list:
                row = _time_shape(torch, dev, dtype, shape, target_s_per_shape, 3, 200)
                sweep.append(row)
                best_so_far = max(best_so_far, row["tflops_median"])
                bar.update(f"{shape[0]}x{shape[1]}x{shape[2]} {row['tflops_median']:.1f} TFLOPS "
                           f"(best {best_so_far:.1f})")
            # Confirm: re-time the top shapes and the reference, each after an idle pause (burst)
            # and again under continuous load (sustained, after the power limit has bitten).
            ranked = sorted(sweep, key=lambda r: -r["tflops_median"])
            candidates = [(r["m"], r["n"], r["k"]) for r in ranked[:confirm_top]]
            if reference not in candidates:
                candidates.append(reference)
            confirmed = [_confirm_shape(torch, dev, dtype, c, idle_s, sustain_s) for c in candidates]
            best = max(confirmed, key=lambda r: r["tflops_burst"])
            best_sustained = max(confirmed, key=lambda r: r["tflops_sustained"])
            ref = next(r for r in confirmed if (r["m"], r["n"], r["k"]) == tuple(reference))
            results[dtype] = {"sweep": sweep, "confirm": confirmed, "best": best,
                              "best_sustained": best_sustained, "reference": ref,
                              "best_over_reference": best["tflops_burst"] / ref["tflops_burst"]}
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    params = {"dtypes": list(dtypes), "shapes": len(shape_list), "reference": list(reference),
              "target_s_per_shape": target_s_per_shape, "confirm_top": confirm_top,
              "idle_s": idle_s, "sustain_s": sustain_s, "shuffle_seed": shuffle_seed, "flop_per_product": "2*m*n*k",
              "tflops": "1e12 FLOP/s; median over repeats of one shape", "inputs": "random normal"}
    return _common.result("matmul", env, params, results)
