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

import itertools
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple, Sequence, Union

from mlcalc import _check

SCHEMA_VERSION = 1  # the JSON layout of mlcalc.bench this module reads
# The collectives a curve may be of: what mlcalc.bench writes (all_to_all, send_recv, as mlcalc.network
# names them) and every nccl-tests *_perf program (alltoall, sendrecv, gather, scatter, hypercube ...).
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv",
               "alltoall", "sendrecv", "gather", "scatter", "hypercube")
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


def _shape(name: str, shape: Any) -> None:
    if not isinstance(shape, tuple) or len(shape) != 3:
        raise ValueError(f"{name}={shape!r} is not allowed: it must be a tuple (m, n, k)")
    for dim, v in zip("mnk", shape):
        _check.positive_int(f"{name}.{dim}", v)


def _sweep(name: str, sizes: Any, columns: Mapping[str, Any]) -> None:
    """A measured sweep: sizes > 0 strictly increasing, each column as long, every figure finite and >= 0."""
    if not isinstance(sizes, tuple) or not sizes:
        raise ValueError(f"{name} is not allowed: it must be a non-empty tuple of sizes")
    for i, v in enumerate(sizes):
        _check.positive(f"{name}[{i}]", v)
        if i and not v > sizes[i - 1]:
            raise ValueError(f"{name}[{i}]={v!r} is not allowed: sizes must increase (it follows {sizes[i - 1]!r})")
    for col, values in columns.items():
        if not isinstance(values, tuple) or len(values) != len(sizes):
            raise ValueError(f"{col} is not allowed: it must be a tuple of {len(sizes)} figures, one per size")
        for i, v in enumerate(values):
            _check.non_negative(f"{col}[{i}]", v)


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

    def __post_init__(self) -> None:
        for name in ("m", "n", "k"):
            _check.positive_int(name, getattr(self, name))
        _check.positive("tflops", self.tflops)


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

    def __post_init__(self) -> None:
        _check.positive("best_tflops", self.best_tflops)
        _shape("best_shape", self.best_shape)
        for name in ("sustained", "reference"):
            if getattr(self, f"{name}_tflops") is not None:
                _check.positive(f"{name}_tflops", getattr(self, f"{name}_tflops"))
            if getattr(self, f"{name}_shape") is not None:
                _shape(f"{name}_shape", getattr(self, f"{name}_shape"))
        if not all(isinstance(r, MatmulShape) for r in self.sweep):
            raise ValueError("sweep is not allowed: it must hold MatmulShape rows")

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
    m, n, k = (_check.positive_int(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    best: tuple[float, float] | None = None
    for r in results if not isinstance(results, MatmulResult) else (results,):
        if not isinstance(r, MatmulResult):  # e.g. measured.bundled(): copies and collectives too
            continue
        for row in r.sweep:
            d = (math.log(row.m / m)) ** 2 + (math.log(row.n / n)) ** 2 + (math.log(row.k / k)) ** 2
            if best is None or d < best[0]:
                best = (d, row.tflops * 1e12)
    if best is None:
        raise ValueError("results is not allowed: it holds no matmul result with a sweep")
    return best[1]


@dataclass(frozen=True)
class CopyResult:
    """Copy bandwidth against size, for one kind of copy."""

    info: RunInfo  # where it comes from
    kind: str  # "d2d" (device to device), "h2d" (host to device) or "d2h"
    sizes_bytes: tuple[int, ...]  # bytes copied
    gbps: tuple[float, ...]  # bytes copied / time, GB/s (1e9 bytes/s)

    def __post_init__(self) -> None:
        _check.choice("kind", self.kind, COPY_KINDS)
        _sweep("sizes_bytes", self.sizes_bytes, {"gbps": self.gbps})

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

    def __post_init__(self) -> None:
        _check.choice("op", self.op, COLLECTIVES)
        _check.positive_int("n_ranks", self.n_ranks)
        _sweep("sizes_bytes", self.sizes_bytes, {"busbw_gbps": self.busbw_gbps, "algbw_gbps": self.algbw_gbps,
                                                 "time_s": self.time_s})

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

    def __post_init__(self) -> None:
        for name in ("batch", "heads", "seq_len", "head_dim"):
            _check.positive_int(name, getattr(self, name))
        _check.positive("fwd_bwd_tflops", self.fwd_bwd_tflops)

    @property
    def fwd_bwd_flops_per_s(self) -> float:
        """Forward + backward throughput, FLOP/s."""
        return self.fwd_bwd_tflops * 1e12


Result = Union[MatmulResult, CopyResult, BusbwCurve, TrainCase, AttentionCase]


# ---------------------------------------------------------------------------------------------
# Reading files: one ValueError naming the file and what is wrong, in time linear in its size
# ---------------------------------------------------------------------------------------------

MAX_FILE_BYTES = 32 * 2**20  # a real result file is kilobytes; refuse anything above 32 MiB unread
MAX_JSON_DEPTH = 32  # this tool's JSON nests 5 deep


class _Bad(ValueError):
    """A malformed document: the message says where (a JSON path or a line) and what is wrong."""


def read_text(path: str | Path) -> str:
    """The text of a result file: UTF-8 (a byte-order mark is accepted), not empty, not binary, not huge."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not allowed: no such file")
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{p}: {size:,} bytes is too large for a result file (at most {MAX_FILE_BYTES:,})")
    raw = p.read_bytes()
    return _decode(raw, str(p))


def _decode(raw: bytes, name: str) -> str:
    if b"\x00" in raw[:65536]:
        raise ValueError(f"{name}: a binary file, not text (it contains NUL bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 text (byte {exc.start} is {raw[exc.start:exc.start + 1]!r})") from None
    if not text.strip():
        raise ValueError(f"{name}: the file is empty")
    return text


def _refuse_constant(name: str) -> float:
    raise _Bad(f"{name} is not allowed in a result (numbers must be finite)")


# A JSON string (its closing quote missing at the end of a truncated text): brackets inside one do not nest.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _json_depth_over(text: str, limit: int) -> bool:
    """Whether ``text`` nests brackets deeper than ``limit`` (outside strings), read left to right.

    The strings and everything but the brackets are dropped by the regex engine and the depth is a running
    sum, not a Python loop over every character (the bundled runs' files are read on a page's first change)."""
    if text.count("[") + text.count("{") <= limit:
        return False  # fewer opening brackets than the limit, strings included: cannot nest deeper
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def parse_json(text: str, name: str = "text") -> Any:
    """JSON text, refusing NaN/Infinity and nesting deeper than MAX_JSON_DEPTH, as one ValueError naming ``name``."""
    if _json_depth_over(text, MAX_JSON_DEPTH):  # before the parser recurses into it
        raise ValueError(f"{name}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except _Bad as exc:
        raise ValueError(f"{name}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}; "
                         "truncated?)") from None
    except RecursionError:  # pragma: no cover - the depth check above comes first
        raise ValueError(f"{name}: JSON nested too deeply") from None


class _Doc:
    """Typed access to a parsed JSON document; every failure names the path inside it."""

    def obj(self, v: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(v, Mapping):
            raise _Bad(f"{where} must be an object ({{...}}), not {_kind(v)}")
        return v

    def arr(self, v: Any, where: str, nonempty: bool = True) -> list:
        if not isinstance(v, list):
            raise _Bad(f"{where} must be a list ([...]), not {_kind(v)}")
        if nonempty and not v:
            raise _Bad(f"{where} is empty")
        return v

    def get(self, d: Mapping[str, Any], key: str, where: str) -> Any:
        if key not in d:
            raise _Bad(f"{where}: the key {key!r} is missing")
        return d[key]

    def num(self, v: Any, where: str, positive: bool = False) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Bad(f"{where} must be a number, not {_kind(v)}")
        x = float(v)
        if not math.isfinite(x) or x < 0 or (positive and x == 0):
            raise _Bad(f"{where}={v!r} is not allowed: it must be a finite number "
                       f"{'greater than 0' if positive else 'of at least 0'}")
        return x

    def count(self, v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v > 2**53:
            raise _Bad(f"{where}={_short(v)} is not allowed: it must be a whole number of at least 1")
        return v

    def text(self, v: Any, where: str) -> str:
        if not isinstance(v, str):
            raise _Bad(f"{where} must be text, not {_kind(v)}")
        return v


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(v), type(v).__name__)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:30] + "..."


def _increasing(sizes: Sequence[float], where: str) -> None:
    for i in range(1, len(sizes)):
        if not sizes[i] > sizes[i - 1]:
            raise _Bad(f"{where}: sizes must increase, but entry {i} ({sizes[i]:g} bytes) follows {sizes[i - 1]:g}")


# ---------------------------------------------------------------------------------------------
# This tool's JSON
# ---------------------------------------------------------------------------------------------


def _info_from_env(env: Mapping[str, Any], label: str) -> RunInfo:
    name = str(env.get("device_name") or "unknown")
    parts = [f"torch {env['torch']}" if env.get("torch") else "", f"CUDA {env['cuda']}" if env.get("cuda") else "",
             f"NCCL {env['nccl']}" if env.get("nccl") else ""]
    return RunInfo("mlcalc.bench", label, name, accelerator_key(name), str(env.get("date_utc") or ""),
                   str(env.get("driver") or ""), ", ".join(p for p in parts if p))


def from_bench(data: Mapping[str, Any], label: str = "") -> list[Result]:
    """Typed results from one ``mlcalc.bench`` JSON document (already parsed).

    Total: whatever the document holds, the answer is the results or one ValueError naming ``label``
    and the place in the document that is wrong (a missing key, a list where an object belongs,
    null or NaN or negative figures, an empty or unsorted sweep).
    """
    name = label or "data"
    try:
        return _from_bench(data, name)
    except _Bad as exc:
        raise ValueError(f"{name}: {exc}") from None


def _from_bench(data: Any, label: str) -> list[Result]:
    d = _Doc()
    if not isinstance(data, Mapping) or data.get("tool") != "mlcalc.bench":
        raise _Bad("not an mlcalc.bench result (no \"tool\": \"mlcalc.bench\" at the top)")
    if data.get("schema") != SCHEMA_VERSION:
        raise _Bad(f"schema={_short(data.get('schema'))} is not allowed: this mlcalc reads schema {SCHEMA_VERSION}")
    kind = d.text(d.get(data, "benchmark", "the document"), "benchmark")
    info = _info_from_env(d.obj(d.get(data, "env", "the document"), "env"), label)
    res = d.obj(d.get(data, "results", "the document"), "results")
    out: list[Result] = []

    def shape(v: Any, where: str) -> tuple[int, int, int]:
        v = d.obj(v, where)
        return (d.count(d.get(v, "m", where), f"{where}.m"), d.count(d.get(v, "n", where), f"{where}.n"),
                d.count(d.get(v, "k", where), f"{where}.k"))

    def tflops(v: Mapping[str, Any], where: str) -> float:
        key = "tflops_burst" if "tflops_burst" in v else "tflops_median"
        return d.num(d.get(v, key, where), f"{where}.{key}", positive=True)

    if kind == "matmul":
        for dtype, v in res.items():
            w = f"results.{dtype}"
            v = d.obj(v, w)
            if "skipped" in v:
                continue
            best = d.obj(d.get(v, "best", w), f"{w}.best")
            ref = d.obj(d.get(v, "reference", w), f"{w}.reference")
            sus = v.get("best_sustained")
            if sus is not None:
                sus = d.obj(sus, f"{w}.best_sustained")
            rows = d.arr(d.get(v, "sweep", w), f"{w}.sweep")
            sweep = []
            for i, r in enumerate(rows):
                wr = f"{w}.sweep[{i}]"
                m, n, k = shape(r, wr)
                sweep.append(MatmulShape(m, n, k, d.num(d.get(r, "tflops_median", wr), f"{wr}.tflops_median",
                                                        positive=True)))
            out.append(MatmulResult(
                info, str(dtype), best_tflops=tflops(best, f"{w}.best"), best_shape=shape(best, f"{w}.best"),
                sustained_tflops=d.num(d.get(sus, "tflops_sustained", f"{w}.best_sustained"),
                                       f"{w}.best_sustained.tflops_sustained", positive=True) if sus else None,
                sustained_shape=shape(sus, f"{w}.best_sustained") if sus else None,
                reference_tflops=tflops(ref, f"{w}.reference"), reference_shape=shape(ref, f"{w}.reference"),
                sweep=tuple(sweep)))
    elif kind == "bandwidth":
        for copy, v in res.items():
            w = f"results.{copy}"
            v = d.obj(v, w)
            if "skipped" in v:
                continue
            if copy not in COPY_KINDS:
                raise _Bad(f"{w}: {copy!r} is not a kind of copy (have: {', '.join(COPY_KINDS)})")
            rows = [d.obj(r, f"{w}.sweep[{i}]") for i, r in enumerate(d.arr(d.get(v, "sweep", w), f"{w}.sweep"))]
            sizes = tuple(int(d.num(d.get(r, "bytes", f"{w}.sweep[{i}]"), f"{w}.sweep[{i}].bytes", positive=True))
                          for i, r in enumerate(rows))
            _increasing(sizes, f"{w}.sweep")
            out.append(CopyResult(info, copy, sizes, tuple(d.num(d.get(r, "gbps", f"{w}.sweep[{i}]"),
                                                              f"{w}.sweep[{i}].gbps") for i, r in enumerate(rows))))
    elif kind == "collectives":
        params = d.obj(d.get(data, "params", "the document"), "params")
        n = d.count(d.get(params, "world_size", "params"), "params.world_size")
        for op, v in res.items():
            w = f"results.{op}"
            if op not in COLLECTIVES:
                raise _Bad(f"{w}: {op!r} is not a collective (have: {', '.join(COLLECTIVES)})")
            rows = [d.obj(r, f"{w}.sweep[{i}]")
                    for i, r in enumerate(d.arr(d.get(d.obj(v, w), "sweep", w), f"{w}.sweep"))]

            def col(key: str, positive: bool = False) -> tuple[float, ...]:
                return tuple(d.num(d.get(r, key, f"{w}.sweep[{i}]"), f"{w}.sweep[{i}].{key}", positive)  # noqa: B023
                             for i, r in enumerate(rows))  # noqa: B023

            sizes = tuple(int(x) for x in col("bytes", positive=True))
            _increasing(sizes, f"{w}.sweep")
            out.append(BusbwCurve(info, op, n, sizes, col("busbw_gbps"), col("algbw_gbps"), col("time_s", True)))
    elif kind == "train":
        for i, c in enumerate(d.arr(d.get(res, "cases", "results"), "results.cases")):
            w = f"results.cases[{i}]"
            c = d.obj(c, w)
            oom = bool(c.get("oom"))
            peak, step = c.get("peak_bytes"), c.get("step_s")
            out.append(TrainCase(
                info, d.text(d.get(c, "model", w), f"{w}.model"),
                MappingProxyType({str(k): d.count(x, f"{w}.config.{k}")
                                  for k, x in d.obj(c.get("config", {}), f"{w}.config").items()}),
                d.count(d.get(c, "batch", w), f"{w}.batch"), d.count(d.get(c, "seq_len", w), f"{w}.seq_len"),
                bool(d.get(c, "recompute", w)), int(d.num(c.get("n_params", 0), f"{w}.n_params")),
                None if peak is None else d.num(peak, f"{w}.peak_bytes", positive=True),
                None if step is None else d.num(step, f"{w}.step_s", positive=True),
                MappingProxyType({str(k): d.num(x, f"{w}.phases.{k}")
                                  for k, x in d.obj(c.get("phases", {}), f"{w}.phases").items()}),
                oom))
    elif kind == "attention":
        for i, c in enumerate(d.arr(d.get(res, "cases", "results"), "results.cases")):
            w = f"results.cases[{i}]"
            c = d.obj(c, w)
            batch, heads, seq_len, head_dim = (d.count(d.get(c, key, w), f"{w}.{key}")
                                               for key in ("batch", "heads", "seq_len", "head_dim"))
            out.append(AttentionCase(info, batch, heads, seq_len, head_dim,
                                     d.num(d.get(c, "fwd_bwd_tflops", w), f"{w}.fwd_bwd_tflops", positive=True)))
    else:
        raise _Bad(f"benchmark={_short(kind)} is not allowed: choose matmul, bandwidth, collectives, train, attention")
    if not out:
        raise _Bad("it holds no results (every entry was skipped)")
    return out


# ---------------------------------------------------------------------------------------------
# nccl-tests and mamf-finder text
# ---------------------------------------------------------------------------------------------

_NCCL_OP = re.compile(r"(all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv|gather|scatter|"
                      r"hypercube)_perf")
_NCCL_RANK = re.compile(r"#[ \t]*Rank[ \t]+\d+[ \t]+Group[ \t]+\d+[ \t]+Pid[ \t]+\d+[ \t]+on[ \t]+\S+"
                        r"[ \t]+device[ \t]+\d+"
                        r"[ \t]+\[[^\]]*\][ \t]+(.*)$")


def parse_nccl_tests(text: str, op: str | None = None, label: str = "nccl-tests") -> BusbwCurve:
    """A bus-bandwidth curve from nccl-tests output (``*_perf`` programs), out-of-place columns.

    Data rows read ``size count type redop root time algbw busbw #wrong time algbw busbw #wrong``
    (older versions have no ``root`` column, and older all_gather/alltoall no ``redop``); sizes are
    bytes, times microseconds, bandwidths GB/s.
    ``op`` is the collective; if None it is read from the program name in the text
    (e.g. "all_reduce_perf"). The rank count is the number of "Rank" lines under
    "Using devices"; the device name is the first one there. One pass over the lines; rows with NaN,
    negative figures or sizes out of order are refused with a ValueError naming ``label`` and the line.
    """
    if not isinstance(text, str):
        raise ValueError(f"{label}: text must be a str, not {type(text).__name__}")
    if op is None:
        found = _NCCL_OP.search(text)
        if not found:
            raise ValueError(f"{label}: op=None is not allowed here: the text names no *_perf program; pass op=...")
        op = found.group(1)
    _check.choice("op", op, COLLECTIVES)
    sizes: list[int] = []
    times: list[float] = []
    alg: list[float] = []
    bus: list[float] = []
    ranks: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            if "Rank" in s:
                m = _NCCL_RANK.match(s)
                if m:
                    ranks.append(m.group(1).strip())
            continue
        tok = s.split()
        if len(tok) not in (11, 12, 13) or not tok[0].isdigit() or not tok[1].isdigit():
            continue
        off = len(tok) - 8  # then time algbw busbw #wrong, out-of-place and in-place (redop, root: per version)
        try:
            t_us, a, b = float(tok[off]), float(tok[off + 1]), float(tok[off + 2])
        except ValueError:
            continue  # e.g. "N/A" where a test did not run
        if not all(math.isfinite(x) and x >= 0 for x in (t_us, a, b)) or t_us == 0:
            raise ValueError(f"{label}: line {lineno}: time {_clip(tok[off])} us, algbw {_clip(tok[off + 1])}, busbw "
                             f"{_clip(tok[off + 2])} GB/s is not allowed: they must be finite, non-negative, and the "
                             "time above 0")
        if len(tok[0]) > 18:  # checked before int(): Python refuses to convert over 4,300 digits
            raise ValueError(f"{label}: line {lineno}: size {_clip(tok[0])} bytes is not allowed: a size has at most "
                             "18 digits")
        size = int(tok[0])
        if sizes and size <= sizes[-1]:
            raise ValueError(f"{label}: line {lineno}: size {size:,} bytes follows {sizes[-1]:,}: "
                             "rows must be in increasing size (one nccl-tests run per text)")
        sizes.append(size)
        times.append(t_us * 1e-6)
        alg.append(a)
        bus.append(b)
    if not sizes:
        raise ValueError(f"{label}: text is not allowed: no nccl-tests data rows found "
                         "(size count type redop ... busbw)")
    device = ranks[0] if ranks else "unknown"
    info = RunInfo("nccl-tests", label, device, accelerator_key(device))
    return BusbwCurve(info, op, max(len(ranks), 1), tuple(sizes), tuple(bus), tuple(alg), tuple(times))


# Dtype names mamf-finder prints (``** Dtype: torch.<name>`` or its --dtype name) -> this book's.
MAMF_DTYPES: Mapping[str, str] = MappingProxyType({
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
    "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8", "float8_e5m2": "fp8", "float8_e5m2fnuz": "fp8",
    "mxfp8": "fp8", "mxfp4": "fp4", "nvfp4": "fp4", "float4_e2m1fn_x2": "fp4", "int8": "int8",
})
_NUM = r"(\d+(?:\.\d+)?)"
_SHAPE = r"(\d+)x(\d+)x(\d+)"
_MAMF_BEST = re.compile(rf"(mean|median|max):[ \t]+{_NUM}[ \t]*TFLOPS[ \t]*@[ \t]*{_SHAPE}")
_MAMF_HEADLINE = re.compile(rf"(MAMF|MSMF)[ \t]*\([^)\n]*\):[ \t]*{_NUM}[ \t]*TFLOPS[ \t]*@[ \t]*{_SHAPE}")


class _MamfSummary(NamedTuple):
    """One summary line of a mamf-finder log (_MAMF_BEST or _MAMF_HEADLINE), as typed, and where it is."""

    tflops: str
    m: str
    n: str
    k: str
    lineno: int


def _mamf_summary(match: re.Match[str], lineno: int) -> _MamfSummary:
    return _MamfSummary(match.group(2), match.group(3), match.group(4), match.group(5), lineno)


_MAMF_ROW = re.compile(rf"[ \t]*\d+[ \t]*\|[ \t]*{_NUM}\(mean\)[ \t]+{_NUM}\(median\)[ \t]+{_NUM}\(max\)"
                       rf"[ \t]*@[ \t]*{_SHAPE}")


def parse_mamf_log(text: str, statistic: str = "median", label: str = "mamf-finder") -> MatmulResult:
    """The best matmul throughput from a ``mamf-finder.py`` log.

    Reads the summary ("Tried N shapes => the best outcomes were: mean/median/max: X TFLOPS @
    MxNxK"), taking ``statistic`` ("mean", "median" or "max"); newer logs that print
    "MAMF (max achievable ...)" and "MSMF (max sustainable ...)" give the best and the sustained
    figure. Per-shape rows ("| 756.1(mean) 758.2(median) 762.3(max) @ 8192x4096x4096"), if
    present, fill the sweep (the tool rewrites them with carriage returns: each counts). Dtype and
    device come from the log's header when it has them (every dtype mamf-finder prints maps onto
    ``MAMF_DTYPES``; fp8-e4m3 and fp8-e5m2 are both "fp8"). One pass over the lines, each matched
    from its start: time linear in the size of the log.
    """
    if not isinstance(text, str):
        raise ValueError(f"{label}: text must be a str, not {type(text).__name__}")
    _check.choice("statistic", statistic, ("mean", "median", "max"))
    dtype, device = "bf16", "unknown"
    sweep: list[MatmulShape] = []
    head: dict[str, _MamfSummary] = {}  # "MAMF" / "MSMF" -> its line
    best: dict[str, _MamfSummary] = {}  # "mean" / "median" / "max" -> its line
    pick = {"mean": 0, "median": 1, "max": 2}[statistic]
    for lineno, line in enumerate(text.splitlines(), 1):  # splitlines also splits the tool's \r progress rows
        s = line.lstrip()
        if not s:
            continue
        if s.startswith("**") and "Dtype:" in s:
            raw = s.split("Dtype:", 1)[1].strip().split()
            name = raw[0].removeprefix("torch.") if raw else ""
            if name not in MAMF_DTYPES:
                raise ValueError(f"{label}: line {lineno}: dtype {name!r} is not one this book knows "
                                 f"(have: {', '.join(MAMF_DTYPES)})")
            dtype = MAMF_DTYPES[name]
        elif "name='" in s and device == "unknown":
            device = s.split("name='", 1)[1].split("'", 1)[0] or "unknown"
        elif s[0].isdigit() and "(mean)" in s:
            m = _MAMF_ROW.match(s)
            if m:
                sweep.append(_mamf_shape(m.groups(), pick, label, lineno))
        elif s.startswith(("MAMF", "MSMF")):
            m = _MAMF_HEADLINE.match(s)
            if m:
                head[m.group(1)] = _mamf_summary(m, lineno)
        elif s.startswith(("mean:", "median:", "max:")):
            m = _MAMF_BEST.match(s)
            if m:
                best[m.group(1)] = _mamf_summary(m, lineno)
    info = RunInfo("mamf-finder", label, device, accelerator_key(device))
    if "MAMF" in head:
        top, sus = head["MAMF"], head.get("MSMF")
        where = f"{label}: line {top.lineno}"
        sus_where = f"{label}: line {sus.lineno}" if sus else label
        return MatmulResult(info, dtype, _mamf_tflops(top.tflops, where), _mamf_dims(top.m, top.n, top.k, where),
                            _mamf_tflops(sus.tflops, sus_where) if sus else None,
                            _mamf_dims(sus.m, sus.n, sus.k, sus_where) if sus else None, sweep=tuple(sweep))
    if statistic not in best:
        raise ValueError(f"{label}: text is not allowed: no 'mean/median/max: X TFLOPS @ MxNxK' summary found "
                         "(is this a mamf-finder log?)")
    top = best[statistic]
    where = f"{label}: line {top.lineno}"
    return MatmulResult(info, dtype, _mamf_tflops(top.tflops, where), _mamf_dims(top.m, top.n, top.k, where),
                        sweep=tuple(sweep))


def _clip(text: str) -> str:
    """A field of a pasted line, shortened for a message (a hostile one can be thousands of digits)."""
    return text if len(text) <= 24 else f"{text[:12]}...{text[-6:]} ({len(text):,} characters)"


def _mamf_tflops(text: str, label: str) -> float:
    value = float(text) if len(text) <= 24 else math.inf
    if not 0 < value < 1e9:
        raise ValueError(f"{label}: TFLOPS {_clip(text)} is not allowed: a measured rate must be above 0 and "
                         "below 1e9")
    return value


def _mamf_dims(m: str, n: str, k: str, label: str) -> tuple[int, int, int]:
    if max(len(m), len(n), len(k)) > 10:
        raise ValueError(f"{label}: shape {_clip(m)}x{_clip(n)}x{_clip(k)} is not allowed: dimensions must be "
                         "1 to 2**31")
    dims = (int(m), int(n), int(k))
    if not all(0 < x <= 2**31 for x in dims):
        raise ValueError(f"{label}: shape {m}x{n}x{k} is not allowed: dimensions must be 1 to 2**31")
    return dims


def _mamf_shape(groups: tuple[str, ...], pick: int, label: str, lineno: int) -> MatmulShape:
    try:
        m, n, k = _mamf_dims(groups[3], groups[4], groups[5], label)
        return MatmulShape(m, n, k, _mamf_tflops(groups[pick], label))
    except ValueError as exc:
        raise ValueError(f"{exc} (line {lineno})") from None


def load(path: str | Path, label: str | None = None) -> list[Result]:
    """Results from one file: this tool's JSON, nccl-tests output, or a mamf-finder log.

    Total and linear: any file gives its results or one ValueError naming the file and what is wrong
    (missing, empty, binary, not UTF-8, too large, truncated or malformed JSON, no data rows...).
    A UTF-8 byte-order mark is accepted.
    """
    p = Path(path)
    text = read_text(p)
    name = label or p.name
    if text.lstrip().startswith(("{", "[")):
        return from_bench(parse_json(text, name), name)
    if "(MxNxK)" in text or "TFLOPS @" in text:
        return [parse_mamf_log(text, label=name)]
    if "busbw" in text or _NCCL_OP.search(p.name):
        return [parse_nccl_tests(text, op=_op_from_name(p.name), label=name)]
    raise ValueError(f"{name}: not an mlcalc.bench JSON, nccl-tests output or mamf-finder log")


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
            out.extend(_bundled_file(name, f))
    return tuple(out)


def _bundled_file(name: str, f: Any, names: str = "") -> list[Result]:
    """The results of one bundled file; with ``names``, none from a file whose text cannot name that benchmark
    (``names`` absent and no \\u escape that could spell it: the file is left unparsed)."""
    label = f"{name}/{f.name}"
    raw = f.read_bytes()
    if names and names.encode() not in raw and b"\\u" not in raw:  # (ASCII: the same test on the UTF-8 text)
        return []
    text = _decode(raw, label)
    if text.lstrip().startswith("{") and "mlcalc.bench" not in text and "\\u" not in text:
        # An object none of whose strings can read "mlcalc.bench" (only a \u escape could spell it otherwise):
        # another tool's file, left unparsed (the serving runs' load logs are megabytes; a first change reads
        # these files). tests/core/test_measured_loaders.py parses every bundled file in full.
        return []
    data = parse_json(text, label)
    if isinstance(data, dict) and data.get("tool") != "mlcalc.bench":
        return []  # other tools' files (e.g. scripts/gpu/bench_decode.py) live beside
    return from_bench(data, label)


@lru_cache(maxsize=None)
def misses(name: str) -> Mapping[str, str]:
    """Stated causes of a model's known misses on one bundled run (its ``misses.json``, written by hand from the run's
    own records): key -> cause, the ``_about`` entry left out; empty where the run has none."""
    _check.choice("run", name, runs())
    f = _measured_dir().joinpath(name).joinpath("misses.json")
    if not f.is_file():
        return MappingProxyType({})
    return MappingProxyType({k: v for k, v in json.loads(f.read_text()).items() if not k.startswith("_")})


@lru_cache(maxsize=None)
def bundled_collectives() -> tuple[BusbwCurve, ...]:
    """The collective curves of every bundled run, read from their ``collectives.json`` alone (the file
    scripts/gpu/run_collectives.sh writes): a page that shows one curve need not parse every run."""
    out: list[BusbwCurve] = []
    for name in runs():
        f = _measured_dir().joinpath(name).joinpath("collectives.json")
        if f.is_file():
            out.extend(r for r in _bundled_file(name, f) if isinstance(r, BusbwCurve))
    return tuple(out)


#: The tool whose files :func:`in_place_sweep` reads (they sit in run folders beside mlcalc.bench's; run() skips them).
IN_PLACE_TOOL = "scripts/gpu/inplace_collectives.py"
IN_PLACE_MODES = ("out_of_place", "in_place")


@lru_cache(maxsize=None)
def in_place_sweep(name: str, file: str = "inplace_n2.json") -> Mapping[tuple[str, str], BusbwCurve]:
    """The all-gather and reduce-scatter of one bundled run in place and out of place, side by side
    (:data:`IN_PLACE_TOOL`; all-reduce, in place as PyTorch runs it, beside them): ``(op, mode) -> curve``.

    In place as nccl-tests' ``-i``: the all-gather's input is the rank's own slice of its output, the
    reduce-scatter's output the rank's own slice of its input. The script times every case of one size in turn,
    the whole round several times; each size's bus bandwidth here is the median over the rounds (time the median
    of the rounds' times). Rows with an error or a wrong result are refused (ValueError naming them)."""
    _check.choice("run", name, runs())
    f = _measured_dir().joinpath(name).joinpath(str(file))
    if not f.is_file():
        raise ValueError(f"file={file!r} is not allowed: run {name!r} has no such file")
    label = f"{name}/{file}"
    data = parse_json(_decode(f.read_bytes(), label), label)
    if not isinstance(data, dict) or data.get("tool") != IN_PLACE_TOOL:
        raise ValueError(f"file={file!r} is not allowed: not written by {IN_PLACE_TOOL}")
    env = data.get("env") or {}
    device = str(env.get("device_name") or "")
    info = RunInfo(IN_PLACE_TOOL, label, device, accelerator_key(device), str(env.get("date_utc") or ""), "",
                   f"torch {env.get('torch', '')}, CUDA {env.get('cuda', '')}, NCCL {env.get('nccl', '')}")
    n = _check.positive_int("world_size", env.get("world_size"))
    rows: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
    for i, r in enumerate(data.get("rows") or ()):
        if "error" in r or not r.get("correct"):
            raise ValueError(f"{label}: row {i} ({r.get('op')}, {r.get('mode')}, {r.get('bytes')} bytes) has no "
                             f"right result: {r.get('error', 'wrong values')}")
        rows.setdefault((str(r["op"]), str(r["mode"])), {}).setdefault(int(r["bytes"]), []).append(r)
    out: dict[tuple[str, str], BusbwCurve] = {}
    for key, by_size in sorted(rows.items()):
        sizes = tuple(sorted(by_size))

        def med(field: str, by_size: dict = by_size, sizes: tuple[int, ...] = sizes) -> tuple[float, ...]:
            return tuple(statistics.median(float(r[field]) for r in by_size[s]) for s in sizes)
        out[key] = BusbwCurve(info, key[0], n, sizes, med("busbw_gbps"), med("algbw_gbps"), med("time_s"))
    return MappingProxyType(out)


#: The small-message collective run (lat16): NCCL eager and in CUDA graphs under four NCCL_PROTO settings, and torch's
#: symmetric-memory one-shot / two-shot all-reduce (scripts/gpu/lat16_bench.py; 4 x H200, NCCL 2.28.9).
SMALL_COLLECTIVES_RUN = "h200x4-2026-11-28-lat16"
#: The tool that wrote its table (small_collectives.json, by scripts/gpu/score_lat16.py).
SMALL_COLLECTIVES_TOOL = "scripts/gpu/lat16_bench.py"


class SmallCollective(NamedTuple):
    """One measured point of :data:`SMALL_COLLECTIVES_RUN`: time per collective (the slowest rank's median of 3)."""

    engine: str  # "nccl", "torch_symm_mem_one_shot" or "torch_symm_mem_two_shot"
    mode: str  # "graph" (CUDA-graph replay of 32 captured calls) or "eager" (a loop of eager calls)
    nccl_proto: str  # NCCL_PROTO: "unset", "LL", "LL128" or "Simple" ("" for torch's kernels)
    nccl_log: bool  # NCCL's INFO log on (its per-call lines are written at capture only)
    collective: str  # "all_reduce", "all_gather" or "reduce_scatter"
    n_ranks: int  # GPUs
    size_bytes: int  # nccl-tests' S: the whole buffer (bf16)
    time_s: float  # seconds per collective
    logged: tuple[str, ...]  # "ring/LL" ...: the algorithm/protocol NCCL's log names for the point (log on only)


@lru_cache(maxsize=None)
def small_collectives(name: str = SMALL_COLLECTIVES_RUN) -> tuple[SmallCollective, ...]:
    """Every point of a small-message collective run's table (``small_collectives.json``)."""
    _check.choice("run", name, runs())
    f = _measured_dir().joinpath(name).joinpath("small_collectives.json")
    if not f.is_file():
        raise ValueError(f"name={name!r} is not allowed: that run has no small_collectives.json")
    label = f"{name}/small_collectives.json"
    data = parse_json(_decode(f.read_bytes(), label), label)
    if not isinstance(data, dict) or data.get("tool") != SMALL_COLLECTIVES_TOOL:
        raise ValueError(f"name={name!r} is not allowed: its table was not written by {SMALL_COLLECTIVES_TOOL}")
    out = []
    for i, r in enumerate(data.get("rows") or ()):
        if r.get("time_s") is None:
            raise ValueError(f"{label}: row {i} has no time")
        out.append(SmallCollective(str(r["engine"]), str(r["mode"]), str(r.get("nccl_proto", "")),
                                   bool(r.get("nccl_log", False)), str(r["coll"]), int(r["n"]), int(r["size_bytes"]),
                                   float(r["time_s"]), tuple(r.get("logged", ()))))
    return tuple(out)


def bundled() -> tuple[Result, ...]:
    """Every result of every bundled run."""
    return tuple(r for name in runs() for r in run(name))


@lru_cache(maxsize=None)
def _bundled_matmuls() -> tuple[Result, ...]:
    """The matmul results of :func:`bundled`, in its order, read from the files that can hold one: a matmul
    benchmark's text names "matmul" (its "benchmark" field), unless a \\u escape spells it. The training planner's
    machines need only these; the other files (megabytes of serving logs) are not parsed for them."""
    out: list[Result] = []
    for name in runs():
        folder = _measured_dir().joinpath(name)
        for f in sorted(folder.iterdir(), key=lambda p: p.name):
            if f.name.endswith(".json"):
                out.extend(r for r in _bundled_file(name, f, "matmul") if isinstance(r, MatmulResult))
    return tuple(out)


def _pick(results: Iterable[Result] | None, cls: type, accelerator: str | None) -> list[Any]:
    if results is None and cls is MatmulResult:
        pool = _bundled_matmuls()
    else:
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
                 results: Iterable[Result] | None = None, n_ranks: int | None = None) -> list[BusbwCurve]:
    """Every bus-bandwidth curve of this collective (optionally only for one accelerator, or one GPU count)."""
    _check.choice("op", op, COLLECTIVES)
    if n_ranks is not None:
        n_ranks = _check.positive_int("n_ranks", n_ranks)
    return [r for r in _pick(results, BusbwCurve, accelerator)
            if r.op == op and (n_ranks is None or r.n_ranks == n_ranks)]


def busbw_curve(op: str = "all_reduce", accelerator: str | None = None,
                results: Iterable[Result] | None = None, n_ranks: int | None = 2) -> BusbwCurve:
    """The curve of this collective with the highest peak bus bandwidth, over ``n_ranks`` GPUs
    (2 by default: the book's pages compare two GPUs; None takes any count)."""
    found = busbw_curves(op, accelerator, results, n_ranks)
    if not found:
        raise ValueError(f"op={op!r}, accelerator={accelerator!r}, n_ranks={n_ranks!r} is not allowed: "
                         "no collective result for it")
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
