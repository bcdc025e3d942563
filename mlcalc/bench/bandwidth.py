"""Memory bandwidth: device-to-device copy, host-to-device and device-to-host copies.

A copy of B bytes inside device memory reads B and writes B. We report both conventions:
``gbps`` = B / t (bytes copied per second) and ``gbps_rw`` = 2B / t (bytes moved through memory
per second), the one to set against a datasheet's memory bandwidth. Host copies use pinned
(page-locked) host memory, as a data loader with ``pin_memory=True`` does, and report B / t, the
one-direction figure to set against the PCIe or C2C link's per-direction rate.
GB = 1e9 bytes throughout.
"""

from __future__ import annotations

from typing import Any, Sequence

from mlcalc import _check
from mlcalc.bench import _common

KINDS = ("d2d", "h2d", "d2h")


def default_sizes(device_type: str) -> list[int]:
    """Copy sizes in bytes: 1 MiB to 2 GiB on a GPU, 64 KiB to 4 MiB on a CPU."""
    if device_type == "cuda":
        return [2**p for p in range(20, 32)]
    return [2**p for p in range(16, 23, 2)]


def run_bandwidth(
    kinds: Sequence[str] = KINDS,
    sizes_bytes: Sequence[int] | None = None,
    device: str | None = None,
    target_s_per_size: float = 0.05,
    progress: bool = True,
) -> dict[str, Any]:
    """Time copies of each size for each kind; return the JSON-ready result.

    On a CPU-only machine only "d2d" runs (a copy within host memory); "h2d" and "d2h" are
    recorded as skipped.
    """
    torch = _common.import_torch()
    for k in kinds:
        _check.choice("kind", k, KINDS)
    _check.positive("target_s_per_size", target_s_per_size)
    dev = _common.pick_device(torch, device)
    sizes = list(sizes_bytes) if sizes_bytes is not None else default_sizes(dev.type)
    for s in sizes:
        _check.positive_int("size_bytes", s)
    env = _common.environment(torch, dev)
    results: dict[str, Any] = {}
    for kind in kinds:
        if kind != "d2d" and dev.type != "cuda":
            results[kind] = {"skipped": "host<->device copies need a CUDA device"}
            continue
        bar = _common.Progress(len(sizes), f"copy {kind}", enabled=progress)
        rows = []
        for size in sizes:
            n = size  # uint8 elements
            if kind == "d2d":
                src = torch.empty(n, dtype=torch.uint8, device=dev).random_(0, 255)
                dst = torch.empty_like(src)
            elif kind == "h2d":
                src = torch.empty(n, dtype=torch.uint8, pin_memory=True).random_(0, 255)
                dst = torch.empty(n, dtype=torch.uint8, device=dev)
            else:
                src = torch.empty(n, dtype=torch.uint8, device=dev).random_(0, 255)
                dst = torch.empty(n, dtype=torch.uint8, pin_memory=True)

            def op(dst: Any = dst, src: Any = src) -> None:
                dst.copy_(src, non_blocking=True)

            first = _common.time_calls(torch, dev, op, repeats=1, warmup=2)[0]
            repeats = int(min(max(target_s_per_size / max(first, 1e-9), 5), 200))
            stats = _common.summary(_common.time_calls(torch, dev, op, repeats=repeats, warmup=1))
            row = {"bytes": size, **stats, "gbps": size / stats["median_s"] / 1e9,
                   "gbps_max": size / stats["min_s"] / 1e9}
            if kind == "d2d":
                row["gbps_rw"] = 2 * size / stats["median_s"] / 1e9
            rows.append(row)
            bar.update(f"{size / 2**20:.0f} MiB {row['gbps']:.1f} GB/s")
            del src, dst
        peak = max(rows, key=lambda r: r["gbps"])
        results[kind] = {"sweep": rows, "peak": peak}
    params = {"kinds": list(kinds), "sizes_bytes": sizes, "target_s_per_size": target_s_per_size,
              "units": "GB = 1e9 bytes; gbps = bytes copied / median time; gbps_rw (d2d) = 2 x bytes / time",
              "host_memory": "pinned"}
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return _common.result("bandwidth", env, params, results)
