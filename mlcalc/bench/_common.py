"""Shared plumbing for the benchmarks: lazy torch import, environment record, timing, progress."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from mlcalc.bench import SCHEMA_VERSION


def import_torch() -> Any:
    """Import PyTorch, or raise ImportError saying how to install the optional extra."""
    try:
        import torch
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("mlcalc.bench needs PyTorch: pip install 'mlcalc[bench]'") from err
    return torch


def pick_device(torch: Any, device: str | None) -> Any:
    """``device`` as a torch.device; None means the current CUDA device if there is one, else CPU."""
    if device is None:
        device = f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device={device!r} is not allowed: choose 'cpu' or 'cuda[:N]'") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} is not allowed: this machine has no CUDA device")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(dev)
    elif dev.type != "cpu":
        raise ValueError(f"device={device!r} is not allowed: choose 'cpu' or 'cuda[:N]'")
    return dev


def _nvidia_smi(device_index: int) -> dict[str, str]:
    fields = ["name", "driver_version", "pci.bus_id", "clocks.max.sm", "power.limit", "memory.total"]
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={device_index}", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in out.split(",")]
    return dict(zip(fields, values)) if len(values) == len(fields) else {}


def environment(torch: Any, device: Any) -> dict[str, Any]:
    """What a result needs to be read later: device, driver, library versions, date, host."""
    env: dict[str, Any] = {
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device_type": device.type,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        smi = _nvidia_smi(device.index or 0)
        env.update(
            device_name=props.name,
            device_count=torch.cuda.device_count(),
            compute_capability=f"{props.major}.{props.minor}",
            multiprocessors=props.multi_processor_count,
            total_memory_bytes=props.total_memory,
            driver=smi.get("driver_version"),
            nvidia_smi=smi,
            nccl=".".join(map(str, torch.cuda.nccl.version())) if hasattr(torch.cuda, "nccl") else None,
            cudnn=torch.backends.cudnn.version(),
        )
    else:
        env.update(device_name=platform.processor() or platform.machine(), device_count=1, driver=None,
                   cpu_threads=torch.get_num_threads())
    env["env_vars"] = {k: v for k, v in sorted(os.environ.items()) if k.startswith(("NCCL_", "TORCH_", "CUDA_"))}
    return env


def result(benchmark: str, env: dict[str, Any], params: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    """The common JSON layout of every benchmark."""
    return {"schema": SCHEMA_VERSION, "tool": "mlcalc.bench", "benchmark": benchmark,
            "env": env, "params": params, "results": results}


def write_json(data: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``data`` as indented JSON (parent folders made), return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    return out


def synchronize(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_calls(torch: Any, device: Any, fn: Callable[[], Any], repeats: int, warmup: int = 2) -> list[float]:
    """Seconds per call of ``fn``, one number per repeat (CUDA events on a GPU, a wall clock on CPU)."""
    for _ in range(warmup):
        fn()
    synchronize(torch, device)
    if device.type == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        for s, e in zip(starts, ends):
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize(device)
        return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def summary(times_s: list[float]) -> dict[str, float]:
    """Median, mean and fastest of a list of times (seconds)."""
    return {"median_s": statistics.median(times_s), "mean_s": statistics.fmean(times_s),
            "min_s": min(times_s), "repeats": len(times_s)}


class Progress:
    """A small text progress bar on stderr; on a non-terminal it prints a line every tenth."""

    def __init__(self, total: int, label: str, enabled: bool = True, stream: Any = None) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_tenth = -1
        self._t0 = time.perf_counter()

    def update(self, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        frac = min(self.done / self.total, 1.0)
        bar = "#" * int(frac * 24)
        line = f"{self.label:<14} [{bar:<24}] {self.done}/{self.total} {time.perf_counter() - self._t0:6.1f}s {note}"
        if self._tty:
            self.stream.write("\r" + line[:160].ljust(160))
            if self.done >= self.total:
                self.stream.write("\n")
        else:
            tenth = int(frac * 10)
            if tenth != self._last_tenth or self.done >= self.total:
                self._last_tenth = tenth
                self.stream.write(line + "\n")
        self.stream.flush()
