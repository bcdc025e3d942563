"""Storage: dataloader bandwidth, checkpoint size and write time, checkpoint interval and goodput,
capacity to buy, and the start-up cost of many small files.

Base units inside: bytes, seconds, FLOP, FLOP/s, bytes/s. Published figures live in
``data/storage.json``, each with its source and its unit (GB = 1e9 bytes, GiB = 2**30 bytes).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple

from mlcalc import _check, compute
from mlcalc.units import GB, TB, GiB, MiB, TiB  # noqa: F401 (re-exported: storage.GB and friends)

# Bytes a unit of bandwidth stands for, per second (the "unit" field of storage.json).
_BANDWIDTH_UNITS: Mapping[str, float] = MappingProxyType({"GB/s": GB, "MiB/s": MiB, "Gbit/s": GB / 8})


# --------------------------------------------------------------------------- data


@lru_cache(maxsize=None)
def data() -> Mapping[str, Any]:
    """The published storage figures of ``data/storage.json`` (read-only view of the parsed file)."""
    raw = json.loads(resources.files("mlcalc.data").joinpath("storage.json").read_text())
    return MappingProxyType(raw)


@dataclass(frozen=True)
class Filesystem:
    """One filesystem or device throughput figure, with its source."""

    key: str  # short name, e.g. "nfs-tcp"
    name: str  # what was measured or specified
    bandwidth_bytes_per_s: float  # the figure in bytes/s (converted from the source's unit)
    unit: str  # the unit the source states it in ("GB/s", "MiB/s")
    scope: str  # "per client", "per device" or "aggregate"
    direction: str  # "read" or "write"
    source: str  # URL of the document the figure comes from
    notes: str  # how the figure was read


@lru_cache(maxsize=None)
def filesystems() -> Mapping[str, Filesystem]:
    """Every filesystem figure in the data file, by key, in file order."""
    out: dict[str, Filesystem] = {}
    for key, entry in data()["filesystems"].items():
        out[key] = Filesystem(
            key=key,
            name=entry["name"],
            bandwidth_bytes_per_s=float(entry["bandwidth"]) * _BANDWIDTH_UNITS[entry["unit"]],
            unit=entry["unit"],
            scope=entry["scope"],
            direction=entry["direction"],
            source=entry["source"],
            notes=entry["notes"],
        )
    return MappingProxyType(out)


def filesystem(key: str) -> Filesystem:
    """The filesystem figure named ``key`` (ValueError listing the known keys otherwise)."""
    _check.choice("filesystem", key, filesystems())
    return filesystems()[key]


# ------------------------------------------------------------ dataloader bandwidth


class DataloaderBandwidth(NamedTuple):
    """Read bandwidth that keeps accelerators busy, by the method of Ibrahim et al. (2021)."""

    per_accelerator_bytes_per_s: float  # bytes/s one accelerator consumes
    per_node_bytes_per_s: float  # bytes/s one node consumes (per accelerator x accelerators per node)
    samples_per_s: float  # samples (or tokens) per second one accelerator processes
    flop_per_byte: float  # FLOPs spent per byte of input: the workload's "storage intensity"


def dataloader_bandwidth(
    bytes_per_sample: float,
    flops_per_sample: float,
    achieved_flops_per_s: float,
    accelerators_per_node: int = 8,
) -> DataloaderBandwidth:
    """Input bandwidth needed so that storage never starves the accelerators.

    ``bandwidth = bytes_per_sample / flops_per_sample * achieved_flops_per_s``

    Parameters
    ----------
    bytes_per_sample : bytes read from storage per training sample (for a language model:
        bytes per token, with ``flops_per_sample`` the training FLOPs per token).
    flops_per_sample : training FLOPs (forward + backward) one sample costs.
    achieved_flops_per_s : FLOP/s one accelerator actually sustains (not its peak).
    accelerators_per_node : accelerators sharing one node's storage link.

    References
    ----------
    K. Z. Ibrahim et al., "Architectural Requirements for Deep Learning Workloads in HPC
    Environments", PMBS 2021: at 1 PFLOP/s CosmoFlow needs 65 GB/s and DeepCAM 9 GB/s.
    """
    bytes_per_sample = _check.positive("bytes_per_sample", bytes_per_sample)
    flops_per_sample = _check.positive("flops_per_sample", flops_per_sample)
    achieved = _check.positive("achieved_flops_per_s", achieved_flops_per_s)
    per_node = _check.positive_int("accelerators_per_node", accelerators_per_node)
    samples_per_s = achieved / flops_per_sample
    per_acc = samples_per_s * bytes_per_sample
    return _check.fields("dataloader_bandwidth", DataloaderBandwidth(
        per_acc, per_acc * per_node, samples_per_s, flops_per_sample / bytes_per_sample))


# Training FLOPs per parameter per token: the convention the field disagrees on.
# 6 = forward (2) + backward (4) (Kaplan et al. 2020); 8 adds a second forward pass for
# activation recomputation, the "hardware FLOPs" BLOOM's README counts ("4*2 co-efficient").
FLOPS_PER_PARAM_PER_TOKEN: Mapping[str, float] = MappingProxyType(
    {"6 (forward + backward)": compute.FLOPS_PER_PARAM_TOKEN,
     "8 (with activation recomputation)": compute.FLOPS_PER_PARAM_TOKEN_RECOMPUTE}
)

# Bytes a token costs on disk, by how the dataset is stored.
BYTES_PER_TOKEN: Mapping[str, float] = MappingProxyType(
    {
        # Megatron-style indexed datasets store ids as uint16 when the vocabulary has < 65,536 entries...
        "uint16 token ids (vocabulary < 65,536)": 2.0,
        # ...and as 32-bit integers otherwise (BLOOM's 250,680-token vocabulary).
        "int32 token ids": 4.0,
        # Raw UTF-8 text: BLOOM's corpus, 1.5 TB of text that tokenized into 350B tokens.
        "raw text (BLOOM corpus: 1.5 TB / 350B tokens)": 1.5e12 / 350e9,
    }
)


def llm_flops_per_token(n_params: float, flops_per_param_per_token: float = 6.0) -> float:
    """Training FLOPs one token costs: ``flops_per_param_per_token * n_params`` (6N or 8N)."""
    n_params = _check.positive("n_params", n_params)
    factor = _check.positive("flops_per_param_per_token", flops_per_param_per_token)
    return _check.positive_result("flops per token", factor * n_params)


def tokens_per_second(achieved_flops_per_s: float, n_params: float, flops_per_param_per_token: float = 6.0) -> float:
    """Tokens one accelerator trains per second: achieved FLOP/s / FLOPs per token."""
    achieved = _check.positive("achieved_flops_per_s", achieved_flops_per_s)
    return _check.result("tokens_per_second", achieved / llm_flops_per_token(n_params, flops_per_param_per_token))


# ------------------------------------------------------------------- checkpoints

# Bytes per parameter of each thing a checkpoint may hold.
CHECKPOINT_COMPONENT_BYTES: Mapping[str, float] = MappingProxyType(
    {
        "bf16 weights": 2.0,
        "fp32 master weights": 4.0,
        "Adam states (2 x fp32)": 8.0,
    }
)

# What is saved: presets of components, by name.
CHECKPOINT_CONTENTS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "weights only (bf16)": ("bf16 weights",),
        "weights only (fp32)": ("fp32 master weights",),
        # BLOOM-176B's Megatron-DeepSpeed checkpoint: 2 + 4 + 8 = 14 bytes per parameter.
        "full: bf16 + fp32 weights + Adam": ("bf16 weights", "fp32 master weights", "Adam states (2 x fp32)"),
        # A checkpoint that keeps only the fp32 master copy next to Adam: 12 bytes per parameter.
        "fp32 weights + Adam": ("fp32 master weights", "Adam states (2 x fp32)"),
    }
)


class CheckpointSize(NamedTuple):
    """Bytes a checkpoint takes on disk, by what it holds."""

    parts_bytes: Mapping[str, float]  # bytes of each component
    total_bytes: float  # sum of parts_bytes
    bytes_per_param: float  # total_bytes / n_params


def checkpoint_size(n_params: float, contents: str | Mapping[str, float] = "full: bf16 + fp32 weights + Adam") -> CheckpointSize:
    """Size of a checkpoint of ``n_params`` parameters.

    ``contents`` is a preset name of ``CHECKPOINT_CONTENTS`` or a mapping of component name to
    bytes per parameter. Metadata, RNG states and the dataloader position are negligible next
    to these and left out.

    References
    ----------
    BigScience tr11-176B-ml README: "8 bytes for fp32 optim, 4+2 bytes for weights (fp32+bf16) -
    total 14 bytes per param"; a full BLOOM-176B checkpoint is 2.3 TiB, its bf16 weights 329 GiB.

    BLOOM-176B (the tr11-176B-ml README: "176*10**9*14/2**30=2294.77GB", their GB being GiB):

    >>> int(checkpoint_size(176e9).total_bytes / 2**30)
    2294
    """
    n_params = _check.positive("n_params", n_params)
    if isinstance(contents, str):
        _check.choice("contents", contents, CHECKPOINT_CONTENTS)
        per_param = {name: CHECKPOINT_COMPONENT_BYTES[name] for name in CHECKPOINT_CONTENTS[contents]}
    elif isinstance(contents, Mapping):
        per_param = {k: _check.non_negative(f"contents[{k!r}]", v) for k, v in contents.items()}
        _check.positive("contents (bytes per parameter, summed)", sum(per_param.values()))
    else:
        raise ValueError(f"contents={contents!r} is not allowed: give a preset name or a mapping of bytes per parameter")
    parts = {name: n_params * b for name, b in per_param.items()}
    total = sum(parts.values())
    return _check.fields("checkpoint_size", CheckpointSize(MappingProxyType(parts), total, total / n_params))


class CheckpointWrite(NamedTuple):
    """How long writing a checkpoint takes, and what limits it."""

    seconds: float  # checkpoint_bytes / effective_bytes_per_s
    effective_bytes_per_s: float  # min(filesystem write bandwidth, n_nodes x node bandwidth)
    bottleneck: str  # "filesystem" or "node network"


def checkpoint_write_time(
    checkpoint_bytes: float,
    filesystem_write_bytes_per_s: float,
    n_nodes: int,
    node_bytes_per_s: float,
) -> CheckpointWrite:
    """Time to write a checkpoint that every node writes its share of, in parallel.

    ``t = checkpoint_bytes / min(filesystem_write_bytes_per_s, n_nodes * node_bytes_per_s)``

    Parameters
    ----------
    checkpoint_bytes : size of the whole checkpoint (see ``checkpoint_size``).
    filesystem_write_bytes_per_s : aggregate write bandwidth the filesystem sustains.
    n_nodes : nodes writing at once (each holds a shard of the state).
    node_bytes_per_s : bandwidth from one node to the storage (its storage NICs, one direction).
    """
    size = _check.positive("checkpoint_bytes", checkpoint_bytes)
    fs = _check.positive("filesystem_write_bytes_per_s", filesystem_write_bytes_per_s)
    nodes = _check.positive_int("n_nodes", n_nodes)
    per_node = _check.positive("node_bytes_per_s", node_bytes_per_s)
    network = _check.result("n_nodes x node_bytes_per_s", nodes * per_node)
    effective, bottleneck = (fs, "filesystem") if fs <= network else (network, "node network")
    return _check.fields("checkpoint_write_time", CheckpointWrite(size / effective, effective, bottleneck))


# ------------------------------------------------------ failures and the interval


def device_mtbf_from_observation(n_devices: int, duration_s: float, n_failures: float) -> float:
    """Mean time between failures of one device, from failures seen on a fleet: ``n * T / failures``.

    Assumes independent failures at a constant rate (exponential), so device-hours add up.
    """
    n = _check.positive_int("n_devices", n_devices)
    duration = _check.positive("duration_s", duration_s)
    failures = _check.positive("n_failures", n_failures)
    return _check.positive_result("device_mtbf_s", n * duration / failures)


def system_mtbf_s(device_mtbf_s: float, n_devices: int) -> float:
    """Mean time between failures of a job on ``n_devices`` devices, any of which stops it: ``M_dev / n``."""
    mtbf = _check.positive("device_mtbf_s", device_mtbf_s)
    n = _check.positive_int("n_devices", n_devices)
    return _check.positive_result("system_mtbf_s", mtbf / n)


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum compute time between checkpoints: ``sqrt(2 * delta * M)``.

    References
    ----------
    J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974.
    """
    delta = _check.positive("checkpoint_s", checkpoint_s)
    mtbf = _check.positive("mtbf_s", mtbf_s)
    return _check.positive_result("young_interval_s", math.sqrt(2.0 * delta * mtbf))


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Optimum compute time between checkpoints in Daly's model: continuous and monotone in both inputs.

    Daly (2006) models the wall-clock time of a job whose failures arrive at random (rate 1/M) and
    that checkpoints every ``tau`` seconds of compute, each checkpoint taking ``delta``:
    ``T_w ~ M e^(R/M) (e^((tau + delta)/M) - 1) T_s / tau``. Setting ``dT_w/dtau = 0`` gives
    ``(1 - tau/M) e^((tau + delta)/M) = 1``, whose root ``tau = M (1 + W0(-e^(-1 - delta/M)))``
    (Lambert W, principal branch) is solved here to machine precision.

    Daly's paper gives a series estimate of that root,
    ``sqrt(2 delta M) (1 + sqrt(delta/2M)/3 + (delta/2M)/9) - delta`` for ``delta < 2M`` and ``M``
    otherwise, within 1% of the root in the first regime; but its two branches do not meet (8M/9 just
    below ``delta = 2M``, M just above), so taken literally a *longer* MTBF gave a *shorter* interval
    there. The root has no switch: it is ``sqrt(2 delta M)`` (Young) for small ``delta / M`` and tends to
    ``M`` as ``delta / M`` grows, increasing in ``M`` throughout.

    References
    ----------
    J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
    Future Generation Computer Systems 22(3), 2006 (with R = 10 min and delta = 5 min his estimate
    gives 117 min for M = 24 h, 57 min for M = 6 h and 9.1 min for M = 15 min).
    """
    delta = _check.positive("checkpoint_s", checkpoint_s)
    mtbf = _check.positive("mtbf_s", mtbf_s)
    return _check.positive_result("daly_interval_s", mtbf * _daly_fraction(delta / mtbf))


def _log1p_minus_plus(u: float) -> float:
    """``log(1 - u) + u`` without cancellation for small u (it is -u^2/2 - u^3/3 - ...)."""
    if u < 1e-3:
        return -(u * u) * (0.5 + u * (1 / 3 + u * (0.25 + u * (0.2 + u / 6))))
    return math.log1p(-u) + u


def _daly_fraction(d: float) -> float:
    """The root u in (0, 1) of ``log(1 - u) + u + d = 0`` (u = tau / M, d = delta / M), by bisection in log u.

    The left side falls monotonically from d > 0 at u = 0 to -inf at u = 1, so the root is unique;
    bisecting log u keeps full relative precision for tiny d (u ~ sqrt(2 d)).
    """
    if d > 700:  # e^(-d) underflows: the root is 1 - e^(-1-d) to double precision
        return 1.0
    lo, hi = -746.0, 0.0  # log u: u from the smallest double to 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid == lo or mid == hi:
            break
        u = math.exp(mid)
        if u >= 1.0 or _log1p_minus_plus(u) + d < 0:
            hi = mid
        else:
            lo = mid
    return math.exp(0.5 * (lo + hi))


class Goodput(NamedTuple):
    """Share of wall-clock time that advances training, and where the rest goes (parts sum to 1)."""

    fraction: float  # useful share: tau / E, E the expected wall time of one checkpoint period
    checkpoint_fraction: float  # time blocked in the checkpoint that completes the period: delta / E
    lost_work_fraction: float  # work (and checkpoints) redone after failures: the rest of E
    restart_fraction: float  # time restarting after failures: R / M (failures arrive at 1/M all along)
    lost_work_per_failure_s: float  # average work lost per failure: about half a checkpoint period


#: Above this many mean times between failures per period (plus restart) goodput is below e**-EXP_LIMIT
#: (about 1e-22): it is reported as 0, and the exponentials are not evaluated (they would overflow).
EXP_LIMIT = 50.0


def goodput(interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0) -> Goodput:
    """Goodput of a run that checkpoints every ``interval_s`` seconds of compute.

    Failures arrive at random at rate 1/M (also while restarting); each costs the restart time R and
    the work since the last checkpoint. One period of ``T = tau + delta`` seconds then takes, on
    average, ``E = M e^(R/M) (e^(T/M) - 1)`` seconds of wall time (Daly 2006, the complete model), and
    ``goodput = tau / E``. While T and R are well below M this is the first-order
    ``1 - delta/T - T/(2M) - R/M``, whose optimum over T is Young's ``sqrt(2 delta M)``; beyond, it stays
    between 0 and 1 (the first-order form passes 100% of lost work once T nears M).

    Where the time goes, as shares of E that sum to 1: the completing checkpoint ``delta / E``,
    restarts ``R / M`` (E / M failures per period, R each; capped by what is left), and the work lost.

    Parameters
    ----------
    interval_s : compute time between two checkpoints (tau).
    checkpoint_s : time training is blocked per checkpoint (delta): the whole write if it is
        synchronous, the copy to host memory if it is asynchronous.
    mtbf_s : mean time between failures of the whole job (see ``system_mtbf_s``).
    restart_s : time from a failure to training again (requeue, load the checkpoint, warm up).

    References
    ----------
    J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
    Future Generation Computer Systems 22 (2006), the wall-time model of its section 3.
    """
    tau = _check.positive("interval_s", interval_s)
    delta = _check.non_negative("checkpoint_s", checkpoint_s)
    mtbf = _check.positive("mtbf_s", mtbf_s)
    restart = _check.non_negative("restart_s", restart_s)
    _check.result("checkpoint period (interval_s + checkpoint_s)", tau + delta)
    return _check.fields("goodput", _goodput_of(tau, delta, mtbf, restart))


def _goodput_of(tau: float, delta: float, mtbf: float, restart: float) -> Goodput:
    """:func:`goodput`'s model for inputs it has checked (floats: tau, mtbf > 0; delta, restart >= 0; tau + delta
    finite); its result is not checked here."""
    period = tau + delta
    x, r = period / mtbf, restart / mtbf
    rst = min(r, 1.0)
    if x + r > EXP_LIMIT:  # goodput below e**-50: nothing advances
        return Goodput(0.0, 0.0, 1.0 - rst, rst, mtbf)
    wall = mtbf * math.exp(r) * math.expm1(x)  # E, seconds (expm1: exact for small x)
    useful, ckpt = tau / wall, delta / wall
    rst = min(rst, max(0.0, 1.0 - useful - ckpt))
    lost = max(0.0, 1.0 - useful - ckpt - rst)
    failures = wall / mtbf  # expected failures per period
    lost_per_failure = lost * wall / failures if failures > 0 else 0.0
    return Goodput(useful, ckpt, lost, rst, lost_per_failure)


def goodput_fractions(intervals_s: Iterable[float], checkpoint_s: float, mtbf_s: float,
                      restart_s: float = 0.0) -> list[float]:
    """``goodput(t, checkpoint_s, mtbf_s, restart_s).fraction`` for each interval ``t`` (a curve's points): the same
    model and values, the shared inputs checked once. An interval or result that :func:`goodput` would refuse is
    refused with its message (that point goes through :func:`goodput`)."""
    delta = _check.non_negative("checkpoint_s", checkpoint_s)
    mtbf = _check.positive("mtbf_s", mtbf_s)
    restart = _check.non_negative("restart_s", restart_s)
    out = []
    for t in intervals_s:
        if type(t) is float and 0.0 < t <= _check.MAX_MAGNITUDE and math.isfinite(t + delta):
            g = _goodput_of(t, delta, mtbf, restart)  # fields are floats (from float inputs)
            # what _check.fields passes: every field >= 0 and finite (a nan or an infinite field makes the sum one)
            if min(g) >= 0 and math.isfinite(sum(g)):
                out.append(g.fraction)
                continue
        out.append(goodput(t, delta, mtbf, restart).fraction)
    return out


# ---------------------------------------------------------------------- capacity

# Bekman's rule: shared storage is reliable up to about 80% of what you pay for.
BEKMAN_USABLE_FRACTION = 0.8


class Capacity(NamedTuple):
    """Storage to buy for a training project."""

    parts_bytes: Mapping[str, float]  # what must fit, by kind
    needed_bytes: float  # sum of parts_bytes: capacity you will actually use
    to_buy_bytes: float  # needed_bytes / usable_fraction: capacity to pay for
    usable_fraction: float  # share of the bought capacity that can be filled reliably


def storage_capacity(
    dataset_bytes: float,
    checkpoint_bytes: float,
    checkpoints_kept: int,
    other_bytes: float = 0.0,
    usable_fraction: float = BEKMAN_USABLE_FRACTION,
) -> Capacity:
    """Capacity to buy: datasets + retained checkpoints + everything else, over the usable fraction.

    ``to_buy = (dataset + checkpoints_kept * checkpoint + other) / usable_fraction``

    References
    ----------
    Bekman's chapter "The AI Battlefield": "If you want a reliable 100TBs you need to rent 125TBs"
    (usable fraction 0.8); GCP Filestore documents 89%.
    """
    dataset = _check.non_negative("dataset_bytes", dataset_bytes)
    ckpt = _check.non_negative("checkpoint_bytes", checkpoint_bytes)
    kept = _check.non_negative_int("checkpoints_kept", checkpoints_kept)
    other = _check.non_negative("other_bytes", other_bytes)
    usable = _check.fraction("usable_fraction", usable_fraction)
    parts = {"datasets": dataset, "checkpoints": kept * ckpt, "code, logs and the rest": other}
    needed = _check.result("bytes to store", sum(parts.values()))
    if not needed > 0:
        raise ValueError("total bytes to store=0 is not allowed: "
                         "dataset_bytes, checkpoint_bytes and other_bytes are all 0")
    return _check.fields("storage_capacity", Capacity(MappingProxyType(parts), needed, needed / usable, usable))


def allocated_bytes(file_bytes: float, n_files: int, block_bytes: float) -> float:
    """Disk space ``n_files`` files of ``file_bytes`` each occupy when space is allocated in whole blocks.

    ``n_files * ceil(file_bytes / block_bytes) * block_bytes`` (no sub-block packing).
    """
    size = _check.positive("file_bytes", file_bytes)
    n = _check.positive_int("n_files", n_files)
    block = _check.positive("block_bytes", block_bytes)
    blocks = _check.result("blocks per file", round(size / block, 9))
    return _check.result("allocated_bytes", n * math.ceil(blocks) * block)


# ------------------------------------------------------------------- small files


class StartupTime(NamedTuple):
    """Time for every process of a job to import its code from a shared filesystem."""

    seconds: float  # max(latency_bound_s, server_bound_s)
    latency_bound_s: float  # one process alone: its operations one after another, each a round trip
    server_bound_s: float  # all processes together: total operations / metadata server rate
    total_ops: float  # metadata operations all processes issue
    bottleneck: str  # "round-trip latency" or "metadata server"


def import_startup_time(
    n_nodes: int,
    processes_per_node: int,
    n_files: int,
    ops_per_file: float,
    metadata_ops_per_s: float,
    op_latency_s: float,
) -> StartupTime:
    """Start-up time of a job whose processes each import ``n_files`` files from shared storage.

    ``t = max(n_files * ops_per_file * op_latency_s,
              n_nodes * processes_per_node * n_files * ops_per_file / metadata_ops_per_s)``

    Each process looks up, stats and opens its files one after another (Python imports are
    sequential), so alone it is bound by the round-trip latency of a metadata operation; all
    processes together are bound by how many metadata operations per second the servers handle.
    Client caches are ignored: with a node-local cache, count one process per node.

    Parameters
    ----------
    n_nodes, processes_per_node : processes starting at once (e.g. 8 ranks per node).
    n_files : files each process reads (Python modules, shared libraries).
    ops_per_file : metadata operations per file (stat, open, lookups; 28.4 per module measured
        for Python 2.7, about 9-10 for Python 3.11).
    metadata_ops_per_s : metadata operations per second the filesystem serves, in aggregate.
    op_latency_s : round-trip time of one metadata operation seen by a client.
    """
    nodes = _check.positive_int("n_nodes", n_nodes)
    procs = _check.positive_int("processes_per_node", processes_per_node)
    files = _check.positive_int("n_files", n_files)
    per_file = _check.positive("ops_per_file", ops_per_file)
    rate = _check.positive("metadata_ops_per_s", metadata_ops_per_s)
    latency = _check.positive("op_latency_s", op_latency_s)
    per_process_ops = _check.result("operations per process", files * per_file)
    total_ops = _check.result("total_ops", nodes * procs * per_process_ops)
    latency_bound = _check.result("latency_bound_s", per_process_ops * latency)
    server_bound = _check.result("server_bound_s", total_ops / rate)
    if server_bound > latency_bound:
        return StartupTime(server_bound, latency_bound, server_bound, total_ops, "metadata server")
    return StartupTime(latency_bound, latency_bound, server_bound, total_ops, "round-trip latency")


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
