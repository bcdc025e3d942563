"""Measured results as typed values the calculators can use: this book's GPU runs and your own.

Three kinds of file are read:

* this tool's JSON (``python -m mlcalc.bench ... --out FILE``, see :mod:`mlcalc.bench`);
* nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf`` ... text);
* a log of Stas Bekman's Maximum Achievable Matmul FLOPS finder (``mamf-finder.py``).

The book's own runs live in ``mlcalc/data/measured/<run>/`` and load with :func:`bundled`. The
helpers :func:`best_matmul_flops`, :func:`copy_bandwidth` and :func:`busbw_curve` pick from any
list of results (the bundled ones by default), so a reader's file replaces ours by passing
``results=load("my_run.json")``.

Units: FLOP/s, bytes/s, bytes, seconds in the properties; the stored figures keep the units
their tools print (TFLOPS = 1e12 FLOP/s, GB/s = 1e9 bytes/s), named in the field.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence, Union

from mlcalc import _check

SCHEMA_VERSION = 1  # the JSON layout of mlcalc.bench this module reads
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall")
COPY_KINDS = ("d2d", "h2d", "d2h")

# How device names read (nvidia-smi / torch) map onto catalogue keys; first match wins.
_DEVICE_KEYS: tuple[tuple[str, str], ...] = (
    ("H100 80GB HBM3", "H100-SXM"),
    ("H100 SXM", "H100-SXM"),
    ("H200", "H200-SXM"),
    ("A100-SXM4-80GB", "A100-80GB"),
    ("A100 80GB", "A100-80GB"),
    ("MI300X", "MI300X"),
)


def accelerator_key(device_name: str) -> str:
    """The catalogue key for a device name as tools print it, or "" if it is not known.

    >>> accelerator_key("NVIDIA H100 80GB HBM3")
    'H100-SXM'
    """
    for text, key in _DEVICE_KEYS:
        if text.lower() in device_name.lower():
            return key
    return ""


@dataclass(frozen=True)
class RunInfo:
    """Where a result comes from."""

    tool: str  # "mlcalc.bench", "nccl-tests" or "mamf-finder"
    label: str  # run folder and file, or the name a reader gave
    device_name: str  # as the tool printed it, e.g. "NVIDIA H100 80GB HBM3"
    accelerator: str  # catalogue key (mlcalc.spec) or "" if unknown
    date_utc: str = ""  # when it ran (ISO 8601), if recorded
    driver: str = ""  # NVIDIA driver version, if recorded
    software: str = ""  # e.g. "torch 2.11.0+cu130, CUDA 13.0, NCCL 2.28.9"


@dataclass(frozen=True)
class MatmulShape:
    """One shape of a matmul sweep."""

    m: int  # rows of the output
    n: int  # columns of the output
    k: int  # inner dimension
    tflops: float  # median TFLOPS (1e12 FLOP/s) over the repeats of this shape


@dataclass(frozen=True)
class MatmulResult:
    """The best matmul throughput a sweep found, for one dtype."""

    info: RunInfo  # where it comes from
    dtype: str  # "bf16", "fp8", ...
    best_tflops: float  # highest TFLOPS found (burst: a cool card, before the power limit bites)
    best_shape: tuple[int, int, int]  # (m, n, k) of the best
    sustained_tflops: float | None = None  # highest TFLOPS under continuous load, if measured
    sustained_shape: tuple[int, int, int] | None = None  # (m, n, k) of that
    reference_tflops: float | None = None  # the reference shape's burst TFLOPS (8192^3), if measured
    reference_shape: tuple[int, int, int] | None = None  # (m, n, k) of the reference
    sweep: tuple[MatmulShape, ...] = ()  # every shape timed

    @property
    def best_flops_per_s(self) -> float:
        """Best (burst) throughput, FLOP/s."""
        return self.best_tflops * 1e12

    @property
    def sustained_flops_per_s(self) -> float:
        """Sustained throughput, FLOP/s (the burst figure where none was measured)."""
        return (self.sustained_tflops if self.sustained_tflops is not None else self.best_tflops) * 1e12

    def flops_per_s_at(self, m: int, n: int, k: int) -> float:
        """Measured FLOP/s of the shape (m, n, k) in the sweep (ValueError if it was not timed)."""
        for row in self.sweep:
            if (row.m, row.n, row.k) == (m, n, k):
                return row.tflops * 1e12
        raise ValueError(f"shape={m}x{n}x{k!r} is not allowed: the sweep {self.info.label!r} did not time it")


def matmul_rate_near(results: Iterable["MatmulResult"], m: int, n: int, k: int) -> float:
    """FLOP/s of the timed shape nearest to (m, n, k) in log space, over the sweeps of ``results``.

    A lookup, not a model: use it where a sweep covered shapes like the ones asked for.
    """
    for name, v in (("m", m), ("n", n), ("k", k)):
        _check.positive_int(name, v)
    best: tuple[float, float] | None = None
    for r in results:
        for row in r.sweep:
            d = (math.log(row.m / m)) ** 2 + (math.log(row.n / n)) ** 2 + (math.log(row.k / k)) ** 2
            if best is None or d < best[0]:
                best = (d, row.tflops * 1e12)
    if best is None:
        raise ValueError("results=[] is not allowed: give at least one matmul result with a sweep")
    return best[1]


@dataclass(frozen=True)
class CopyResult:
    """Copy bandwidth against size, for one kind of copy."""

    info: RunInfo  # where it comes from
    kind: str  # "d2d" (device to device), "h2d" (host to device) or "d2h"
    sizes_bytes: tuple[int, ...]  # bytes copied
    gbps: tuple[float, ...]  # bytes copied / time, GB/s (1e9 bytes/s)

    @property
    def peak_bytes_per_s(self) -> float:
        """Highest bytes copied per second."""
        return max(self.gbps) * 1e9

    @property
    def memory_bytes_per_s(self) -> float:
        """Bytes moved through memory per second: read + write for a device-to-device copy
        (what a datasheet's memory bandwidth counts), the copy rate itself for host copies."""
        return self.peak_bytes_per_s * (2 if self.kind == "d2d" else 1)


@dataclass(frozen=True)
class BusbwCurve:
    """Bus bandwidth of one collective against message size (nccl-tests conventions)."""

    info: RunInfo  # where it comes from
    op: str  # "all_reduce", "all_gather", "reduce_scatter", ...
    n_ranks: int  # processes (GPUs) taking part
    sizes_bytes: tuple[int, ...]  # message size: whole buffer (all-gather output, reduce-scatter input)
    busbw_gbps: tuple[float, ...]  # bus bandwidth, GB/s
    algbw_gbps: tuple[float, ...]  # algorithm bandwidth = size / time, GB/s
    time_s: tuple[float, ...]  # time of one operation, seconds

    @property
    def peak_busbw_bytes_per_s(self) -> float:
        """Highest bus bandwidth over the sweep, bytes/s."""
        return max(self.busbw_gbps) * 1e9

    def busbw_bytes_per_s_at(self, size_bytes: float) -> float:
        """Bus bandwidth at ``size_bytes``, interpolated linearly in log(size) between measured
        sizes (the end values outside the measured range), bytes/s."""
        size = _check.positive("size_bytes", size_bytes)
        xs = [math.log(s) for s in self.sizes_bytes]
        x = math.log(size)
        if x <= xs[0]:
            return self.busbw_gbps[0] * 1e9
        if x >= xs[-1]:
            return self.busbw_gbps[-1] * 1e9
        for i in range(1, len(xs)):
            if x <= xs[i]:
                w = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
                return ((1 - w) * self.busbw_gbps[i - 1] + w * self.busbw_gbps[i]) * 1e9
        raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class TrainCase:
    """One measured training configuration of :mod:`mlcalc.bench.train`."""

    info: RunInfo  # where it comes from
    model: str  # preset name, e.g. "gpt2-124M"
    config: Mapping[str, int]  # n_layer, n_head, d_model, vocab_size, mlp_ratio
    batch: int  # sequences per step
    seq_len: int  # tokens per sequence
    recompute: bool  # activation checkpointing of every block
    n_params: int  # parameters of the model built
    peak_bytes: float | None  # torch.cuda.max_memory_allocated over the timed steps (None: CPU, or OOM)
    step_s: float | None  # median step time, seconds (None: out of memory)
    phases: Mapping[str, float] = field(default_factory=dict)  # memory and time at phase boundaries
    oom: bool = False  # ran out of memory


@dataclass(frozen=True)
class AttentionCase:
    """SDPA throughput for one attention shape."""

    info: RunInfo  # where it comes from
    batch: int  # sequences
    heads: int  # attention heads
    seq_len: int  # tokens per sequence
    head_dim: int  # width of one head
    fwd_bwd_tflops: float  # causal forward + backward, TFLOPS (forward 2 b s^2 h, backward 2.5x)

    @property
    def fwd_bwd_flops_per_s(self) -> float:
        """Forward + backward throughput, FLOP/s."""
        return self.fwd_bwd_tflops * 1e12


Result = Union[MatmulResult, CopyResult, BusbwCurve, TrainCase, AttentionCase]


# ---------------------------------------------------------------------------------------------
# This tool's JSON
# ---------------------------------------------------------------------------------------------


def _info_from_env(env: Mapping[str, Any], label: str) -> RunInfo:
    name = str(env.get("device_name") or "unknown")
    parts = [f"torch {env['torch']}" if env.get("torch") else "", f"CUDA {env['cuda']}" if env.get("cuda") else "",
             f"NCCL {env['nccl']}" if env.get("nccl") else ""]
    return RunInfo("mlcalc.bench", label, name, accelerator_key(name), str(env.get("date_utc", "")),
                   str(env.get("driver") or ""), ", ".join(p for p in parts if p))


def from_bench(data: Mapping[str, Any], label: str = "") -> list[Result]:
    """Typed results from one ``mlcalc.bench`` JSON document (already parsed)."""
    if not isinstance(data, Mapping) or data.get("tool") != "mlcalc.bench":
        raise ValueError("data is not allowed: it is not an mlcalc.bench result (no 'tool': 'mlcalc.bench')")
    if data.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"schema={data.get('schema')!r} is not allowed: this mlcalc reads schema {SCHEMA_VERSION}")
    info = _info_from_env(data["env"], label or data["benchmark"])
    res = data["results"]
    out: list[Result] = []
    kind = data["benchmark"]
    if kind == "matmul":
        for dtype, v in res.items():
            if "skipped" in v:
                continue
            best, ref = v["best"], v["reference"]
            sus = v.get("best_sustained")
            out.append(MatmulResult(
                info, dtype,
                best_tflops=float(best.get("tflops_burst", best.get("tflops_median"))),
                best_shape=(best["m"], best["n"], best["k"]),
                sustained_tflops=float(sus["tflops_sustained"]) if sus else None,
                sustained_shape=(sus["m"], sus["n"], sus["k"]) if sus else None,
                reference_tflops=float(ref.get("tflops_burst", ref.get("tflops_median"))),
                reference_shape=(ref["m"], ref["n"], ref["k"]),
                sweep=tuple(MatmulShape(r["m"], r["n"], r["k"], float(r["tflops_median"])) for r in v["sweep"]),
            ))
    elif kind == "bandwidth":
        for k, v in res.items():
            if "skipped" in v:
                continue
            out.append(CopyResult(info, k, tuple(int(r["bytes"]) for r in v["sweep"]),
                                  tuple(float(r["gbps"]) for r in v["sweep"])))
    elif kind == "collectives":
        n = int(data["params"]["world_size"])
        for op, v in res.items():
            rows = v["sweep"]
            out.append(BusbwCurve(info, op, n, tuple(int(r["bytes"]) for r in rows),
                                  tuple(float(r["busbw_gbps"]) for r in rows),
                                  tuple(float(r["algbw_gbps"]) for r in rows), tuple(float(r["time_s"]) for r in rows)))
    elif kind == "train":
        for c in res["cases"]:
            oom = bool(c.get("oom"))
            out.append(TrainCase(info, c["model"], MappingProxyType(dict(c.get("config", {}))), int(c["batch"]),
                                 int(c["seq_len"]), bool(c["recompute"]), int(c.get("n_params", 0)),
                                 c.get("peak_bytes"), c.get("step_s"), MappingProxyType(dict(c.get("phases", {}))),
                                 oom))
    elif kind == "attention":
        for c in res["cases"]:
            out.append(AttentionCase(info, int(c["batch"]), int(c["heads"]), int(c["seq_len"]), int(c["head_dim"]),
                                     float(c["fwd_bwd_tflops"])))
    else:
        raise ValueError(f"benchmark={kind!r} is not allowed: choose matmul, bandwidth, collectives, train, attention")
    return out


# ---------------------------------------------------------------------------------------------
# nccl-tests and mamf-finder text
# ---------------------------------------------------------------------------------------------

_NCCL_OP = re.compile(r"(all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall)_perf")


def parse_nccl_tests(text: str, op: str | None = None, label: str = "nccl-tests") -> BusbwCurve:
    """A bus-bandwidth curve from nccl-tests output (``*_perf`` programs), out-of-place columns.

    Data rows read ``size count type redop root time algbw busbw #wrong time algbw busbw #wrong``
    (older versions have no ``root`` column); sizes are bytes, times microseconds, bandwidths GB/s.
    ``op`` is the collective; if None it is read from the program name in the text
    (e.g. "all_reduce_perf"). The rank count is the number of "Rank" lines under
    "Using devices"; the device name is the first one there.
    """
    if op is None:
        found = _NCCL_OP.search(text)
        if not found:
            raise ValueError("op=None is not allowed here: the text names no *_perf program; pass op=...")
        op = found.group(1)
    _check.choice("op", op, COLLECTIVES)
    sizes, times, alg, bus = [], [], [], []
    ranks: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+\S+\s+device\s+\d+\s+\[[^\]]*\]\s+(.*)$", s)
            if m:
                ranks.append(m.group(1).strip())
            continue
        tok = s.split()
        if len(tok) not in (12, 13) or not tok[0].isdigit() or not tok[1].isdigit():
            continue
        off = 5 if len(tok) == 13 else 4  # with or without the root column
        try:
            t_us, a, b = float(tok[off]), float(tok[off + 1]), float(tok[off + 2])
        except ValueError:
            continue
        sizes.append(int(tok[0]))
        times.append(t_us * 1e-6)
        alg.append(a)
        bus.append(b)
    if not sizes:
        raise ValueError("text is not allowed: no nccl-tests data rows found (size count type redop ... busbw)")
    device = ranks[0] if ranks else "unknown"
    info = RunInfo("nccl-tests", label, device, accelerator_key(device))
    return BusbwCurve(info, op, max(len(ranks), 1), tuple(sizes), tuple(bus), tuple(alg), tuple(times))


_MAMF_BEST = re.compile(r"^(mean|median|max):\s+([\d.]+)\s*TFLOPS\s*@\s*(\d+)x(\d+)x(\d+)", re.M)
_MAMF_HEADLINE = re.compile(r"^(MAMF|MSMF)\s*\([^)]*\):\s*([\d.]+)\s*TFLOPS\s*@\s*(\d+)x(\d+)x(\d+)", re.M)
_MAMF_ROW = re.compile(r"^\s*\d+\s*\|\s*([\d.]+)\(mean\)\s+([\d.]+)\(median\)\s+([\d.]+)\(max\)\s*@\s*(\d+)x(\d+)x(\d+)", re.M)


def parse_mamf_log(text: str, statistic: str = "median", label: str = "mamf-finder") -> MatmulResult:
    """The best matmul throughput from a ``mamf-finder.py`` log.

    Reads the summary ("Tried N shapes => the best outcomes were: mean/median/max: X TFLOPS @
    MxNxK"), taking ``statistic`` ("mean", "median" or "max"); newer logs that print
    "MAMF (max achievable ...)" and "MSMF (max sustainable ...)" give the best and the sustained
    figure. Per-shape rows ("| 756.1(mean) 758.2(median) 762.3(max) @ 8192x4096x4096"), if
    present, fill the sweep. Dtype and device come from the log's header when it has them.
    """
    _check.choice("statistic", statistic, ("mean", "median", "max"))
    dtype_m = re.search(r"\*\*\s*Dtype:\s*(?:torch\.)?(\w+)", text)
    dtype = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8"}.get(
        dtype_m.group(1), dtype_m.group(1)) if dtype_m else "bf16"
    dev_m = re.search(r"name='([^']+)'", text)
    device = dev_m.group(1) if dev_m else "unknown"
    info = RunInfo("mamf-finder", label, device, accelerator_key(device))
    sweep = tuple(MatmulShape(int(m), int(n), int(k), float({"mean": a, "median": b, "max": c}[statistic]))
                  for a, b, c, m, n, k in _MAMF_ROW.findall(text))
    head = {h[0]: h for h in _MAMF_HEADLINE.findall(text)}
    if "MAMF" in head:
        _, tf, m, n, k = head["MAMF"]
        sus = head.get("MSMF")
        return MatmulResult(info, dtype, float(tf), (int(m), int(n), int(k)),
                            float(sus[1]) if sus else None,
                            (int(sus[2]), int(sus[3]), int(sus[4])) if sus else None, sweep=sweep)
    best = {b[0]: b for b in _MAMF_BEST.findall(text)}
    if statistic not in best:
        raise ValueError("text is not allowed: no 'mean/median/max: X TFLOPS @ MxNxK' summary found "
                         "(is this a mamf-finder log?)")
    _, tf, m, n, k = best[statistic]
    return MatmulResult(info, dtype, float(tf), (int(m), int(n), int(k)), sweep=sweep)


def load(path: str | Path, label: str | None = None) -> list[Result]:
    """Results from one file: this tool's JSON, nccl-tests output, or a mamf-finder log."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not allowed: no such file")
    text = p.read_text()
    name = label or p.name
    if text.lstrip().startswith("{"):
        return from_bench(json.loads(text), name)
    if "(MxNxK)" in text or "TFLOPS @" in text:
        return [parse_mamf_log(text, label=name)]
    if "busbw" in text:
        return [parse_nccl_tests(text, op=_op_from_name(p.name), label=name)]
    raise ValueError(f"path={str(path)!r} is not allowed: not an mlcalc.bench JSON, nccl-tests output "
                     "or mamf-finder log")


def _op_from_name(filename: str) -> str | None:
    m = _NCCL_OP.search(filename)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------------------------
# The book's own runs, and picking from results
# ---------------------------------------------------------------------------------------------


def _measured_dir() -> Any:
    return resources.files("mlcalc.data").joinpath("measured")


def runs() -> tuple[str, ...]:
    """Names of the bundled run folders (mlcalc/data/measured/<run>), sorted."""
    return tuple(sorted(p.name for p in _measured_dir().iterdir() if p.is_dir()))


@lru_cache(maxsize=None)
def run(name: str) -> tuple[Result, ...]:
    """Every result of one bundled run folder."""
    _check.choice("run", name, runs())
    out: list[Result] = []
    folder = _measured_dir().joinpath(name)
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if f.name.endswith(".json"):
            data = json.loads(f.read_text())
            if data.get("tool") != "mlcalc.bench":  # other tools' files (e.g. scripts/gpu/bench_decode.py) live beside
                continue
            out.extend(from_bench(data, f"{name}/{f.name}"))
    return tuple(out)


def bundled() -> tuple[Result, ...]:
    """Every result of every bundled run."""
    return tuple(r for name in runs() for r in run(name))


def _pick(results: Iterable[Result] | None, cls: type, accelerator: str | None) -> list[Any]:
    pool = bundled() if results is None else tuple(results)
    out = [r for r in pool if isinstance(r, cls)]
    if accelerator is not None:
        out = [r for r in out if r.info.accelerator == accelerator]
    return out


def matmul(accelerator: str = "H100-SXM", dtype: str = "bf16", results: Iterable[Result] | None = None) -> MatmulResult:
    """The matmul result with the highest best TFLOPS for this accelerator and dtype."""
    found = [r for r in _pick(results, MatmulResult, accelerator) if r.dtype == dtype]
    if not found:
        raise ValueError(f"accelerator={accelerator!r}, dtype={dtype!r} is not allowed: no matmul result for it "
                         f"(have: {sorted({(r.info.accelerator, r.dtype) for r in _pick(results, MatmulResult, None)})})")
    return max(found, key=lambda r: r.best_tflops)


def best_matmul_flops(accelerator: str = "H100-SXM", dtype: str = "bf16", sustained: bool = False,
                      results: Iterable[Result] | None = None) -> float:
    """Measured achievable matmul FLOP/s: the best burst figure, or the sustained one."""
    r = matmul(accelerator, dtype, results)
    return r.sustained_flops_per_s if sustained else r.best_flops_per_s


def copy_bandwidth(accelerator: str = "H100-SXM", kind: str = "d2d",
                   results: Iterable[Result] | None = None) -> CopyResult:
    """The copy result of this kind with the highest peak for this accelerator."""
    _check.choice("kind", kind, COPY_KINDS)
    found = [r for r in _pick(results, CopyResult, accelerator) if r.kind == kind]
    if not found:
        raise ValueError(f"accelerator={accelerator!r}, kind={kind!r} is not allowed: no copy result for it")
    return max(found, key=lambda r: r.peak_bytes_per_s)


def busbw_curves(op: str = "all_reduce", accelerator: str | None = None,
                 results: Iterable[Result] | None = None) -> list[BusbwCurve]:
    """Every bus-bandwidth curve of this collective (optionally only for one accelerator)."""
    _check.choice("op", op, COLLECTIVES)
    return [r for r in _pick(results, BusbwCurve, accelerator) if r.op == op]


def busbw_curve(op: str = "all_reduce", accelerator: str | None = None,
                results: Iterable[Result] | None = None) -> BusbwCurve:
    """The curve of this collective with the highest peak bus bandwidth."""
    found = busbw_curves(op, accelerator, results)
    if not found:
        raise ValueError(f"op={op!r}, accelerator={accelerator!r} is not allowed: no collective result for it")
    return max(found, key=lambda r: r.peak_busbw_bytes_per_s)


def train_cases(label_prefix: str, results: Iterable[Result] | None = None) -> list[TrainCase]:
    """Training cases whose run label starts with ``label_prefix`` (e.g. "h100-2026-11-26/")."""
    found = [r for r in _pick(results, TrainCase, None) if r.info.label.startswith(label_prefix)]
    if not found:
        raise ValueError(f"label_prefix={label_prefix!r} is not allowed: no training cases under it")
    return found


def attention_rate(batch: int, heads: int, seq_len: int, label_prefix: str = "",
                   results: Iterable[Result] | None = None) -> float:
    """Measured causal attention forward+backward FLOP/s for one shape."""
    for r in _pick(results, AttentionCase, None):
        if r.info.label.startswith(label_prefix) and (r.batch, r.heads, r.seq_len) == (batch, heads, seq_len):
            return r.fwd_bwd_flops_per_s
    raise ValueError(f"batch={batch}, heads={heads}, seq_len={seq_len!r} is not allowed: no attention case for it")


def attention_rate_near(batch: int, heads: int, seq_len: int, label_prefix: str = "",
                        results: Iterable[Result] | None = None) -> float:
    """Measured attention FLOP/s of the case nearest to (batch x seq_len tokens, heads, seq_len)."""
    found = [r for r in _pick(results, AttentionCase, None) if r.info.label.startswith(label_prefix)]
    if not found:
        raise ValueError(f"label_prefix={label_prefix!r} is not allowed: no attention cases under it")
    for name, v in (("batch", batch), ("heads", heads), ("seq_len", seq_len)):
        _check.positive_int(name, v)

    def dist(r: AttentionCase) -> float:
        return (math.log(r.batch * r.seq_len / (batch * seq_len)) ** 2 + math.log(r.heads / heads) ** 2
                + math.log(r.seq_len / seq_len) ** 2)

    return min(found, key=dist).fwd_bwd_flops_per_s


def flops_table(results: Sequence[Result] | None = None, sustained: bool = False) -> dict[str, dict[str, dict[str, object]]]:
    """Best measured matmul TFLOPS by accelerator and dtype, in the shape of
    ``mlcalc/data/achievable_matmul.json`` (for ``compute.register_flops_table``)."""
    table: dict[str, dict[str, dict[str, object]]] = {}
    for r in _pick(results, MatmulResult, None):
        if not r.info.accelerator:
            continue
        tf = (r.sustained_tflops or r.best_tflops) if sustained else r.best_tflops
        shape = r.sustained_shape if sustained and r.sustained_shape else r.best_shape
        cur = table.setdefault(r.info.accelerator, {}).get(r.dtype)
        if cur is None or tf > float(cur["tflops"]):  # type: ignore[arg-type]
            table[r.info.accelerator][r.dtype] = {
                "tflops": tf, "best_shape_mxnxk": "x".join(map(str, shape)), "software": r.info.software,
                "source": f"mlcalc/data/measured/{r.info.label}" if r.info.tool == "mlcalc.bench" else r.info.label,
                "notes": f"{r.info.tool} on {r.info.device_name}, {r.info.date_utc}"
                         + ("" if r.sustained_tflops is not None else
                            "; this run had no separate burst and sustained timing (its sweep ran back to back)")}
    return table


def register_measured(name: str = "measured", results: Sequence[Result] | None = None, sustained: bool = False) -> str:
    """Register the measured matmul figures as a FLOPS source of ``mlcalc.compute`` and return its
    name, so ``compute.achievable_flops("H100-SXM", "bf16", source="measured")`` uses them."""
    from mlcalc import compute  # imported here: compute is the accelerators part's module

    kind = "sustained (after the power limit bites)" if sustained else "best burst"
    compute.register_flops_table(name, flops_table(results, sustained),
                                 f"matmul TFLOPS measured by mlcalc.bench ({kind}); this book's runs or yours")
    return name
