"""Command line: ``python -m mlcalc.bench {matmul,bandwidth,collectives,train} --out FILE``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from mlcalc.bench import _common


def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mlcalc.bench", description=__doc__)
    sub = p.add_subparsers(dest="bench", required=True)
    for name in ("matmul", "bandwidth", "collectives", "train", "attention"):
        s = sub.add_parser(name)
        s.add_argument("--out", help="write the JSON result here (default: print it)")
        s.add_argument("--no-progress", action="store_true", help="no progress bar")
        if name != "collectives":
            s.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present)")
    m = sub.choices["matmul"]
    m.add_argument("--dtypes", default="bf16,fp8", help="comma list of fp32,tf32,bf16,fp16,fp8")
    m.add_argument("--shapes", default=None, help="'MxNxK,MxNxK,...' instead of the default sweep")
    m.add_argument("--target-s", type=float, default=0.08, help="seconds of timing per shape")
    m.add_argument("--reference", default=None, help="reference shape MxNxK (default 8192x8192x8192 on a GPU)")
    m.add_argument("--confirm-top", type=int, default=6, help="best shapes to confirm (burst and sustained)")
    m.add_argument("--sustain-s", type=float, default=1.5, help="seconds of load before the sustained timing")
    m.add_argument("--gpt-shapes", default=None,
                   help="instead of a sweep, the matmul shapes of training steps: 'model:batch:seq,...'")
    b = sub.choices["bandwidth"]
    b.add_argument("--sizes", type=_ints, default=None, help="comma list of byte counts")
    c = sub.choices["collectives"]
    c.add_argument("--backend", default=None, choices=("nccl", "gloo"))
    c.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,all_to_all,send_recv")
    c.add_argument("--sizes", type=_ints, default=None, help="comma list of byte counts")
    c.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    t = sub.choices["train"]
    t.add_argument("--steps", type=int, default=6)
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--cases", default=None, help="JSON list of cases (default: the GPU sweep, or a tiny CPU case)")
    a = p.parse_args(argv)
    progress = not a.no_progress
    out: dict[str, Any] | None
    if a.bench == "matmul":
        from mlcalc.bench.matmul import Shape, parse_shape, run_matmul
        shapes: list[Shape] | None = None
        if a.shapes:
            shapes = [parse_shape(s) for s in a.shapes.split(",")]
        if a.gpt_shapes:
            from mlcalc.gpt_program import preset, step_gemms
            found: dict[tuple[int, int, int], None] = {}
            for item in a.gpt_shapes.split(","):
                model, batch, seq = item.split(":")
                for g in step_gemms(preset(model), int(batch), int(seq), recompute=False):
                    found[(g.m, g.n, g.k)] = None
            shapes = list(found)
        ref = parse_shape(a.reference) if a.reference else None
        out = run_matmul(dtypes=a.dtypes.split(","), shapes=shapes, reference=ref, device=a.device,
                         target_s_per_shape=a.target_s, confirm_top=a.confirm_top,
                         sustain_s=a.sustain_s, progress=progress)
    elif a.bench == "bandwidth":
        from mlcalc.bench.bandwidth import run_bandwidth
        out = run_bandwidth(sizes_bytes=a.sizes, device=a.device, progress=progress)
    elif a.bench == "collectives":
        from mlcalc.bench.collectives import run_collectives
        out = run_collectives(ops=a.ops.split(","), sizes_bytes=a.sizes, backend=a.backend,
                              dtype=a.dtype, progress=progress)
    elif a.bench == "attention":
        from mlcalc.bench.attention import run_attention
        out = run_attention(device=a.device, progress=progress)
    else:
        from mlcalc.bench.train import run_train
        cases = json.loads(a.cases) if a.cases else None

        def save(partial: dict[str, Any]) -> None:
            if a.out:
                _common.write_json(partial, a.out)

        out = run_train(cases=cases, device=a.device, warmup=a.warmup, steps=a.steps,
                        progress=progress, on_case=save)
    if out is None:  # a collectives rank other than 0
        return 0
    if a.out:
        _common.write_json(out, a.out)
    else:
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
