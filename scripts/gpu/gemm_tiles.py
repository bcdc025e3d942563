"""GEMM times at the small row counts serving runs (issue 25, tile15): how long one projection of a decoder layer takes
at M = 1 .. 4,096 rows, in bf16 (``F.linear``, nn.Linear's call) and in FP8 (``torch._scaled_mm``, e4m3 inputs with
per-tensor scales, bf16 output, as an FP8 serving engine calls cuBLASLt), at the layer shapes of Llama 3.1 8B /
Mixtral 8x7B (the same attention and expert widths) and Llama 3.1 70B, each split 1, 2, 4 and 8 ways as tensor
parallelism splits them (column-parallel QKV and gate+up: N / tp; row-parallel output and down: K / tp).

Each point: ``copies`` distinct weight matrices (together at least 256 MB, past the 50 MB L2: every product reads its
weights from HBM, as a serving step does) multiplied one after another inside one captured CUDA graph, the graph
replayed until about 25 ms of work, three groups; seconds per product = the median group's time / (replays x copies).
A baseline at the start and the end (8,192 x 8,192 x 8,192 in each dtype, and one mid shape) says whether the card's
pace held. Inputs random normal (never zeros). The FP8 result is checked against a bf16 product of the same
quantized inputs (relative error printed).

Usage: python gemm_tiles.py --out gemm_tiles.json [--deadline-s S] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time

try:  # the shapes below are read without torch (scripts/gpu/predict_gemm_tiles.py)
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - on the GPU machine torch is there
    torch = F = None  # type: ignore[assignment]

T0 = time.perf_counter()
ROWS = [1, 8, 16, 32, 64, 100, 128, 192, 256, 384, 512, 768, 1024, 1530, 2048, 3072, 4096]
#: (model, hidden, q width, kv width, ffn)
MODELS = [("llama8b", 4096, 4096, 1024, 14336), ("llama70b", 8192, 8192, 1024, 28672)]
TPS = [1, 2, 4, 8]
COPY_BYTES = 256 * 2**20
TARGET_S = 0.025


def shapes() -> list[tuple[str, int, str, int, int]]:
    out = []
    for name, h, q, kv, f in MODELS:
        for tp in TPS:
            out += [(name, tp, "qkv", (q + 2 * kv) // tp, h), (name, tp, "o", h, q // tp),
                    (name, tp, "gate_up", 2 * f // tp, h), (name, tp, "down", h, f // tp)]
    return out


def env() -> dict:
    p = torch.cuda.get_device_properties(0)
    smi = ""
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,"
                              "temperature.gpu", "--format=csv"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        pass
    return {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cublas_lt": getattr(torch.backends.cuda, "preferred_blas_library",
                                                               lambda: None)().__str__(),
            "device_name": p.name, "multiprocessors": p.multi_processor_count, "total_memory_bytes": p.total_memory,
            "compute_capability": f"{p.major}.{p.minor}", "nvidia_smi": smi, "python": platform.python_version(),
            "host": platform.node()}


def _fp8(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = (t.abs().amax().float() / 448.0).clamp(min=1e-12)
    return (t / scale).to(torch.float8_e4m3fn), scale


class Point:
    """The weights of one (N, K) shape in one dtype, ready for any M."""

    def __init__(self, n: int, k: int, dtype: str):
        self.n, self.k, self.dtype = n, k, dtype
        per = n * k * (2 if dtype == "bf16" else 1)
        self.copies = max(1, min(64, -(-COPY_BYTES // per)))
        self.w = []
        for _ in range(self.copies):
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            if dtype == "bf16":
                self.w.append((w, None))
            else:
                q, s = _fp8(w)
                self.w.append((q, s))  # (N, K) row-major: q.t() is (K, N) column-major, as _scaled_mm wants
        self.per_bytes = per

    def run(self, x, xs) -> None:
        for w, s in self.w:
            if self.dtype == "bf16":
                F.linear(x, w)
            else:
                torch._scaled_mm(x, w.t(), scale_a=xs, scale_b=s, out_dtype=torch.bfloat16)

    def time(self, m: int) -> dict:
        x = torch.randn(m, self.k, device="cuda", dtype=torch.bfloat16)
        xs = None
        if self.dtype == "fp8":
            x, xs = _fp8(x)
        for _ in range(2):
            self.run(x, xs)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            self.run(x, xs)
            torch.cuda.synchronize()
            with torch.cuda.graph(g):
                self.run(x, xs)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        st.record()
        g.replay()
        en.record()
        en.synchronize()
        once = max(st.elapsed_time(en) / 1e3, 1e-6)
        reps = max(1, min(2000, int(TARGET_S / once)))
        groups = []
        for _ in range(3):
            st.record()
            for _ in range(reps):
                g.replay()
            en.record()
            en.synchronize()
            groups.append(st.elapsed_time(en) / 1e3 / (reps * self.copies))
        del g
        sec = statistics.median(groups)
        return {"m": m, "n": self.n, "k": self.k, "dtype": self.dtype, "copies": self.copies, "replays": reps,
                "s": sec, "groups_s": groups, "tflops": 2.0 * m * self.n * self.k / sec / 1e12,
                "weight_bytes_per_s": self.per_bytes / sec}


def check_fp8() -> float:
    a = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(6144, 4096, device="cuda", dtype=torch.bfloat16)
    qa, sa = _fp8(a)
    qb, sb = _fp8(b)
    got = torch._scaled_mm(qa, qb.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16).double()
    ref = (qa.double() * sa.double()) @ (qb.double() * sb.double()).t()
    return float((got - ref).norm() / ref.norm())


def baseline(tag: str) -> list[dict]:
    out = []
    for dt in ("bf16", "fp8"):
        for n, k, m in ((8192, 8192, 8192), (6144, 4096, 1530)):
            p = Point(n, k, dt)
            r = p.time(m)
            r["baseline"] = tag
            out.append(r)
            del p
            torch.cuda.empty_cache()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline-s", type=float, default=330.0)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(25)
    res = {"schema": 1, "tool": "scripts/gpu/gemm_tiles.py", "env": env(), "rows": ROWS, "points": [],
           "skipped": [], "fp8_check_rel_err": check_fp8()}
    print("fp8 check rel err", res["fp8_check_rel_err"], flush=True)
    res["baseline_start"] = baseline("start")
    todo = shapes()
    if a.quick:
        todo = todo[:2]
    for dt in ("fp8", "bf16"):
        for name, tp, what, n, k in todo:
            if time.perf_counter() - T0 > a.deadline_s:
                res["skipped"].append({"model": name, "tp": tp, "what": what, "dtype": dt, "why": "deadline"})
                continue
            p = Point(n, k, dt)
            for m in ROWS:
                r = p.time(m)
                r.update(model=name, tp=tp, what=what)
                res["points"].append(r)
            print(f"{dt} {name} tp{tp} {what} {n}x{k}: " + " ".join(
                f"{r['m']}:{r['s'] * 1e6:.1f}" for r in res["points"][-len(ROWS):]), flush=True)
            del p
            torch.cuda.empty_cache()
    res["baseline_end"] = baseline("end")
    res["wall_s"] = time.perf_counter() - T0
    with open(a.out, "w") as f:
        json.dump(res, f, separators=(",", ":"))
    for r in res["baseline_start"] + res["baseline_end"]:
        print(r["baseline"], r["dtype"], r["m"], r["n"], r["k"], f"{r['tflops']:.0f} TFLOPS")
    print("points", len(res["points"]), "skipped", len(res["skipped"]), "wall", round(res["wall_s"]), "s")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
