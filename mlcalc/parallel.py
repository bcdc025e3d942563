"""Parallelism and the network: what each kind of parallelism sends, pipeline schedules, layouts.

Base units: bytes, seconds, FLOP/s. Volumes are bytes each GPU sends (one direction)
per training step; times use :func:`mlcalc.network.collective_time`, so any bus
bandwidth (a datasheet peak, a derated figure, an nccl-tests measurement) plugs in.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Mapping, NamedTuple

from mlcalc import _check, compute, models
from mlcalc.models import ModelConfig
from mlcalc import network as net

# --------------------------------------------------------------------------- reference models


def _load_reference_models() -> tuple[Mapping[str, tuple[float, int, int, int, int, int, int, int]], int]:
    raw = json.loads(resources.files("mlcalc.data").joinpath("links.json").read_text())["reference_models"]
    table = {name: (float(m["n_params"]), int(m["heads"]), int(m["hidden"]), int(m["layers"]), int(m["t"]),
                    int(m["p"]), int(m["gpus"]), int(m["batch"]))
             for name, m in raw["models"].items()}
    return MappingProxyType(table), int(raw["seq_len"])


# Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
# Using Megatron-LM", Table 1 (data in mlcalc/data/links.json, "reference_models"):
# name -> (parameters, attention heads, hidden size, layers, t, p, GPUs, global batch).
NARAYANAN_TABLE1, NARAYANAN_SEQ_LEN = _load_reference_models()


# Most layers a model may have: suggest_layout loops over them (the largest model of Table 1 has 128;
# mlcalc.models caps n_layers at models.MAX_LAYERS, which is below this).
MAX_LAYERS = 100_000


@dataclass(frozen=True)
class Workload:
    """A model (one :class:`mlcalc.models.ModelConfig`) trained on sequences of ``seq_len`` tokens."""

    model: ModelConfig  # the architecture (mlcalc.models)
    seq_len: int = 2048  # tokens per sequence s

    def __post_init__(self) -> None:
        if not isinstance(self.model, ModelConfig):
            raise ValueError(f"model={self.model!r} is not allowed: give an mlcalc.models.ModelConfig")
        _check.positive_int("seq_len", self.seq_len)
        if self.model.n_layers > MAX_LAYERS:
            raise ValueError(f"n_layers={self.model.n_layers!r} is not allowed: at most {MAX_LAYERS:,} "
                             "(the layout helper loops over the layers)")

    @property
    def name(self) -> str:
        """The model's name."""
        return self.model.name

    @property
    def n_params(self) -> float:
        """Parameters (all experts)."""
        return float(self.model.n_params())

    @property
    def hidden(self) -> int:
        """Hidden size h."""
        return self.model.hidden

    @property
    def n_layers(self) -> int:
        """Transformer layers."""
        return self.model.n_layers


def reference_model(name: str) -> Workload:
    """A model of Narayanan et al.'s Table 1 by name (e.g. "GPT-145.6B"): the "Megatron GPT ..." preset
    of mlcalc.models at the paper's 2048 tokens."""
    _check.choice("model", name, NARAYANAN_TABLE1)
    return Workload(models.preset("Megatron " + name.replace("-", " ", 1)), NARAYANAN_SEQ_LEN)


# --------------------------------------------------------------------------- which collective, how many bytes

# Which collectives each kind of parallelism uses (Lockwood's notes "Communication"; ZeRO, Megatron-LM,
# Korthikanti et al. 2022 for sequence parallelism, GShard / Switch for experts).
COLLECTIVES_USED: Mapping[str, str] = MappingProxyType({
    "data parallel (DDP)": "all_reduce of the gradients, overlapped with the backward pass",
    "ZeRO-1 / ZeRO-2": "reduce_scatter of the gradients + all_gather of the updated parameters",
    "ZeRO-3 / FSDP": "all_gather of the parameters (forward and again in backward) + reduce_scatter of the gradients",
    "tensor parallel": "all_reduce of activations: 2 per layer forward, 2 backward",
    "sequence parallel": "each tensor-parallel all_reduce becomes an all_gather + reduce_scatter",
    "pipeline parallel": "send_recv of activations forward and their gradients backward, per micro-batch",
    "expert parallel": "all_to_all to send tokens to their experts and back: 2 forward, 2 backward per MoE layer",
})

DP_STRATEGIES = ("ddp", "zero1", "zero2", "zero3", "fsdp")


class _Op(NamedTuple):
    what: str  # what it carries
    collective: str  # one of mlcalc.network.COLLECTIVES
    message_bytes: float  # size as nccl-tests counts it (see network.collective_time), >= 0
    count: int  # type: ignore[assignment]  # how many per training step, >= 1 (the name hides tuple.count, as NamedTuple allows)
    group: int  # ranks in the collective's group, >= 1


class Op(_Op):
    """One collective a GPU takes part in, repeated ``count`` times per step (checked when built)."""

    __slots__ = ()

    def __new__(cls, what: str, collective: str, message_bytes: float, count: int, group: int) -> "Op":
        _check.choice("collective", collective, net.COLLECTIVES)
        return super().__new__(cls, str(what), collective, _check.non_negative("message_bytes", message_bytes),
                               _check.positive_int("count", count), _check.positive_int("group", group))


def wire_bytes(op: Op, volume: str = "exact") -> float:
    """Bytes one GPU sends for ``op`` per step: count x message x bus-bandwidth factor.

    ``volume="2x payload"`` counts an all_reduce as twice its payload, the rule of thumb,
    instead of 2(n-1)/n (see :func:`mlcalc.network.allreduce_volume_factor`).
    """
    if not isinstance(op, Op):
        op = Op(*op)
    if op.collective == "send_recv":
        return op.count * op.message_bytes
    if op.collective == "all_reduce":
        return op.count * op.message_bytes * net.allreduce_volume_factor(op.group, volume)
    _check.choice("volume", volume, net.VOLUME_CONVENTIONS)
    return op.count * op.message_bytes * net.busbw_factor(op.collective, op.group)


def data_parallel_ops(n_params: float, dp: int, strategy: str = "ddp", bytes_per_value: float = 2.0) -> tuple[Op, ...]:
    """What data parallelism sends per step, per GPU.

    ``ddp``: one all_reduce of the gradients (Psi values); ``zero1``/``zero2``: a
    reduce_scatter of the gradients and an all_gather of the parameters; ``zero3``/``fsdp``:
    two all_gathers of the parameters (forward, backward) and a reduce_scatter. With large
    ``dp`` that is 2 Psi, 2 Psi and 3 Psi values on the wire (Rajbhandari et al. 2020, 7.2).
    ``n_params`` is the number of parameters this GPU's data-parallel group replicates
    (the model divided by tensor and pipeline parallelism).
    """
    psi = _check.positive("n_params", n_params)
    dp = _check.positive_int("dp", dp)
    _check.choice("strategy", strategy, DP_STRATEGIES)
    size = _check.result("message bytes", psi * _check.positive("bytes_per_value", bytes_per_value))
    if strategy == "ddp":
        return (Op("gradients", "all_reduce", size, 1, dp),)
    if strategy in ("zero1", "zero2"):
        return (Op("gradients", "reduce_scatter", size, 1, dp), Op("parameters", "all_gather", size, 1, dp))
    return (Op("parameters (forward)", "all_gather", size, 1, dp),
            Op("parameters (backward)", "all_gather", size, 1, dp),
            Op("gradients", "reduce_scatter", size, 1, dp))


def tensor_parallel_ops(model: Workload, tp: int, micro_batch: int, n_micro: int, layers_here: int | None = None,
                        sequence_parallel: bool = False, bytes_per_value: float = 2.0) -> tuple[Op, ...]:
    """What tensor (Megatron) parallelism sends per step, per GPU.

    Each transformer layer all_reduces a b x s x h activation twice in the forward pass and
    twice in the backward pass (Shoeybi et al. 2019, Fig. 4: "4 total communication
    operations"); with sequence parallelism each becomes an all_gather plus a
    reduce_scatter, the same bytes (Korthikanti et al. 2022).
    """
    tp = _check.positive_int("tp", tp)
    b = _check.positive_int("micro_batch", micro_batch)
    m = _check.positive_int("n_micro", n_micro)
    layers = model.n_layers if layers_here is None else _check.positive_int("layers_here", layers_here)
    size = b * model.seq_len * model.hidden * _check.positive("bytes_per_value", bytes_per_value)
    count = 4 * layers * m
    if sequence_parallel:
        return (Op("activations", "all_gather", size, count, tp), Op("activations", "reduce_scatter", size, count, tp))
    return (Op("activations", "all_reduce", size, count, tp),)


def pipeline_parallel_ops(model: Workload, micro_batch: int, n_micro: int, bytes_per_value: float = 2.0) -> tuple[Op, ...]:
    """What a pipeline stage sends per step: a b x s x h activation forward and its gradient
    backward, per micro-batch (Narayanan et al. 2021, 3.2)."""
    b = _check.positive_int("micro_batch", micro_batch)
    m = _check.positive_int("n_micro", n_micro)
    size = b * model.seq_len * model.hidden * _check.positive("bytes_per_value", bytes_per_value)
    return (Op("activations + their gradients", "send_recv", size, 2 * m, 2),)


def expert_parallel_ops(tokens: int, hidden: int, ep: int, moe_layers: int, top_k: int = 1,
                        bytes_per_value: float = 2.0) -> tuple[Op, ...]:
    """What expert parallelism sends per step: per MoE layer, an all_to_all of the routed tokens
    to the experts and one back, forward and backward (GShard, Switch Transformer)."""
    tokens = _check.positive_int("tokens", tokens)
    size = tokens * _check.positive_int("top_k", top_k) * _check.positive_int("hidden", hidden) * _check.positive(
        "bytes_per_value", bytes_per_value)
    return (Op("routed tokens", "all_to_all", size, 4 * _check.positive_int("moe_layers", moe_layers),
               _check.positive_int("ep", ep)),)


# --------------------------------------------------------------------------- compute vs communication

# Kaplan et al. 2020, "Scaling Laws for Neural Language Models", 2.1: a forward pass costs
# about 2N FLOP per token and the backward pass twice that, 6N in all (mlcalc.compute's convention).
FLOPS_PER_PARAM_PER_TOKEN = compute.FLOPS_PER_PARAM_TOKEN
BACKWARD_SHARE = 4.0 / 6.0  # the backward pass's share of the training FLOPs


def step_compute_s(n_params: float, tokens_per_step: float, n_gpus: int, flops_per_gpu: float,
                   mfu: float = 0.5) -> float:
    """Compute time of one step: 6 N tokens / (GPUs x peak x MFU)."""
    n_params = _check.positive("n_params", n_params)
    tokens = _check.positive("tokens_per_step", tokens_per_step)
    g = _check.positive_int("n_gpus", n_gpus)
    return _check.result("step_compute_s", FLOPS_PER_PARAM_PER_TOKEN * n_params * tokens
                         / (g * _check.positive("flops_per_gpu", flops_per_gpu) * _check.fraction("mfu", mfu)))


class Overlap(NamedTuple):
    """Can a communication hide behind the backward pass?"""

    comm_s: float  # communication time
    window_s: float  # time it can overlap with (the backward pass)
    exposed_s: float  # what is left over: max(0, comm - window)
    hidden: bool  # True when it fits in the window


def overlap(comm_s: float, compute_s: float, backward_share: float = BACKWARD_SHARE) -> Overlap:
    """Gradient all-reduce against the backward pass (``backward_share`` of the compute)."""
    comm_s = _check.non_negative("comm_s", comm_s)
    window = _check.non_negative("compute_s", compute_s) * _check.fraction("backward_share", backward_share)
    exposed = max(0.0, comm_s - window)
    return Overlap(comm_s, window, exposed, exposed == 0.0)


# --------------------------------------------------------------------------- pipeline schedules

SCHEDULES = ("gpipe", "1f1b", "interleaved")
# Bounds of a simulated schedule (its loops and drawing grow with p x m x v): stages, micro-batches, boxes.
MAX_STAGES = 1024
MAX_MICRO_BATCHES = 16384
MAX_SLOTS = 200_000  # forward + backward boxes, 2 p m v


def bubble_fraction(p: int, m: int, v: int = 1, relative_to: str = "ideal") -> float:
    """Idle share of a pipeline flush schedule.

    ``relative_to="ideal"``: bubble time over ideal compute time, (p-1)/m, and (p-1)/(m v)
    with v interleaved chunks per device (Narayanan et al. 2021, 2.2). ``"total"``:
    bubble over the whole step, (p-1)/(m v + p - 1) (GPipe's (K-1)/(M+K-1) for v = 1).

    Narayanan et al. 2021, Figure 4: 4 pipeline stages, 8 micro-batches:

    >>> bubble_fraction(4, 8)
    0.375
    """
    p = _check.positive_int("p", p)
    m = _check.positive_int("m", m)
    v = _check.positive_int("v", v)
    _check.choice("relative_to", relative_to, ("ideal", "total"))
    if relative_to == "ideal":
        return (p - 1) / (m * v)
    return (p - 1) / (m * v + p - 1)


class Slot(NamedTuple):
    """One box of a pipeline timeline."""

    device: int  # pipeline rank, 0 = first stage
    start: float  # start time, in units of one stage's forward pass
    end: float  # end time
    phase: str  # "F" (forward) or "B" (backward)
    micro: int  # micro-batch, from 0
    chunk: int  # model chunk on this device (interleaved), from 0


class Timeline(NamedTuple):
    """A simulated pipeline schedule."""

    slots: tuple[Slot, ...]  # every forward and backward box
    makespan: float  # time until the last device finishes
    busy: float  # compute time per device: m (t_f + t_b)
    bubble_fraction: float  # (makespan - busy) / busy, idle over ideal
    peak_in_flight: int  # most micro-batches' activations one device holds at once (interleaved: chunk
    #                      activations divided by v, i.e. in units of one whole stage's micro-batch)


def _order(kind: str, p: int, m: int, v: int, d: int) -> list[tuple[str, int, int]]:
    """Per-device order of (phase, micro, chunk)."""
    if kind == "gpipe":
        return [("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)]
    if kind == "1f1b":
        warm = min(p - d - 1, m)
        seq = [("F", i, 0) for i in range(warm)]
        f, b = warm, 0
        while f < m:
            seq += [("F", f, 0), ("B", b, 0)]
            f, b = f + 1, b + 1
        seq += [("B", i, 0) for i in range(b, m)]
        return seq
    # interleaved 1F1B (Megatron-LM): virtual micro-batch k -> (micro, chunk)
    total = m * v

    def fwd(k: int) -> tuple[int, int]:
        group, pos = divmod(k, p * v)
        return group * p + pos % p, pos // p

    def bwd(k: int) -> tuple[int, int]:
        micro, chunk = fwd(k)
        return micro, v - 1 - chunk

    warm = min((p - d - 1) * 2 + (v - 1) * p, total)
    seq = [("F", *fwd(k), ) for k in range(warm)]
    f, b = warm, 0
    while f < total:
        seq += [("F", *fwd(f)), ("B", *bwd(b))]
        f, b = f + 1, b + 1
    seq += [("B", *bwd(k)) for k in range(b, total)]
    return seq


def pipeline_schedule(kind: str, p: int, m: int, v: int = 1, t_forward: float = 1.0,
                      t_backward: float = 2.0) -> Timeline:
    """Simulate a pipeline schedule with no communication cost.

    ``kind``: "gpipe" (all forwards, then all backwards; Huang et al. 2019), "1f1b"
    (PipeDream-Flush: warm up, then one forward one backward; Narayanan et al. 2021) or
    "interleaved" (1F1B over v model chunks per device; Narayanan et al. 2021, needs m a
    multiple of p). ``t_forward`` and ``t_backward`` are one stage's times per
    micro-batch (each chunk takes 1/v of them).
    """
    _check.choice("kind", kind, SCHEDULES)
    p = _check.positive_int("p", p)
    m = _check.positive_int("m", m)
    v = _check.positive_int("v", v)
    tf = _check.positive("t_forward", t_forward)
    tb = _check.positive("t_backward", t_backward)
    if kind != "interleaved" and v != 1:
        raise ValueError(f"v={v!r} is not allowed for kind={kind!r}: only 'interleaved' has v > 1")
    if kind == "interleaved" and m % p:
        raise ValueError(f"m={m!r} is not allowed for kind='interleaved': it must be a multiple of p={p}")
    if p > MAX_STAGES:
        raise ValueError(f"p={p!r} is not allowed: at most {MAX_STAGES} stages")
    if m > MAX_MICRO_BATCHES:
        raise ValueError(f"m={m!r} is not allowed: at most {MAX_MICRO_BATCHES} micro-batches")
    if 2 * p * m * v > MAX_SLOTS:
        raise ValueError(f"v={v!r} is not allowed with p={p}, m={m}: the schedule would have {2 * p * m * v:,} "
                         f"boxes, at most {MAX_SLOTS:,}")
    tf_c, tb_c = tf / v, tb / v
    orders = [_order(kind, p, m, v, d) for d in range(p)]
    n_stages = p * v
    done: dict[tuple[str, int, int], float] = {}  # (phase, micro, virtual stage) -> end time
    free = [0.0] * p
    pos = [0] * p
    slots: list[Slot] = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for d in range(p):
            while pos[d] < len(orders[d]):
                phase, micro, chunk = orders[d][pos[d]]
                stage = chunk * p + d
                if phase == "F":
                    deps = [("F", micro, stage - 1)] if stage > 0 else []
                else:
                    deps = [("F", micro, stage)] + ([("B", micro, stage + 1)] if stage < n_stages - 1 else [])
                if any(dep not in done for dep in deps):
                    break
                start = max([free[d]] + [done[dep] for dep in deps])
                end = start + (tf_c if phase == "F" else tb_c)
                done[(phase, micro, stage)] = end
                free[d] = end
                slots.append(Slot(d, start, end, phase, micro, chunk))
                pos[d] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    makespan = max(s.end for s in slots)
    busy = m * (tf + tb)
    peak = 0
    for d in range(p):
        live = 0
        for s in sorted((s for s in slots if s.device == d), key=lambda s: s.start):
            live += 1 if s.phase == "F" else -1
            peak = max(peak, live)
    if kind == "interleaved":
        peak = math.ceil(peak / v)
    slots.sort(key=lambda s: (s.device, s.start))
    return Timeline(tuple(slots), makespan, busy, (makespan - busy) / busy, peak)


# --------------------------------------------------------------------------- layout helper


class _Layout(NamedTuple):
    tp: int  # tensor-parallel size, inside a node
    pp: int  # pipeline stages, across nodes
    dp: int  # data-parallel replicas
    state_bytes_per_gpu: float  # model-state bytes each GPU holds (params x bytes / (tp pp))
    budget_bytes: float  # model-state bytes allowed per GPU (memory x state_memory_fraction)


class GridLayout(_Layout):
    """How GPUs split the work, a tensor x pipeline x data-parallel grid with the model-state bytes each GPU
    holds (checked when built; the step-time engine's fuller description is :class:`mlcalc.steptime.Layout`)."""

    __slots__ = ()

    def __new__(cls, tp: int, pp: int, dp: int, state_bytes_per_gpu: float = 0.0,
                budget_bytes: float = 0.0) -> "GridLayout":
        return super().__new__(cls, _check.positive_int("tp", tp), _check.positive_int("pp", pp),
                               _check.positive_int("dp", dp),
                               _check.non_negative("state_bytes_per_gpu", state_bytes_per_gpu),
                               _check.non_negative("budget_bytes", budget_bytes))


def suggest_layout(model: Workload, n_gpus: int, gpus_per_node: int, gpu_memory_bytes: float,
                   bytes_per_param: float = 16.0, state_memory_fraction: float = 0.5) -> GridLayout:
    """Tensor parallel inside the node, pipeline across nodes, data parallel outside.

    1. Smallest power-of-two tp <= gpus_per_node whose share of the model states fits
       the budget (``state_memory_fraction`` of memory, the rest left for activations).
    2. If tp = gpus_per_node is not enough, the fewest pipeline stages that divide the
       layers evenly and make the states fit.
    3. dp = n_gpus / (tp pp).

    ``bytes_per_param`` = 16 is mixed-precision Adam as the ZeRO paper counts it. With
    the defaults this rule gives the (t, p) of all ten models of Narayanan et al.'s
    Table 1 (a rule we fitted to their choices, not their own procedure).
    """
    n_gpus = _check.positive_int("n_gpus", n_gpus)
    g = _check.positive_int("gpus_per_node", gpus_per_node)
    mem = _check.positive("gpu_memory_bytes", gpu_memory_bytes)
    bpp = _check.positive("bytes_per_param", bytes_per_param)
    budget = mem * _check.fraction("state_memory_fraction", state_memory_fraction)
    states = model.n_params * bpp
    tp = 1
    while states / tp > budget and tp * 2 <= g:
        tp *= 2
    pp = 1
    if states / tp > budget:
        fits = [d for d in range(1, model.n_layers + 1) if model.n_layers % d == 0 and states / (tp * d) <= budget]
        if not fits:
            raise ValueError(f"gpu_memory_bytes={gpu_memory_bytes!r} is not allowed: even {tp * model.n_layers} GPUs "
                             f"(tp={tp}, one layer per stage) cannot hold {states / 1e9:,.0f} GB of model states")
        pp = fits[0]
    if n_gpus % (tp * pp):
        raise ValueError(f"n_gpus={n_gpus!r} is not allowed: it must be a multiple of tp x pp = {tp * pp}")
    return GridLayout(tp, pp, n_gpus // (tp * pp), states / (tp * pp), budget)


class CommLine(NamedTuple):
    """One line of a step's communication budget."""

    parallelism: str  # "tensor", "pipeline", "data"
    link: str  # "intra-node" or "inter-node"
    wire_bytes: float  # bytes one GPU sends per step
    time_s: float  # time per step (alpha-beta model), not overlapped


class Budget(NamedTuple):
    """Communication against compute for one training step of a layout."""

    layout: GridLayout  # the layout
    lines: tuple[CommLine, ...]  # per parallelism
    compute_s: float  # compute time per step
    dp_overlap: Overlap  # the data-parallel gradient traffic against the backward pass
    exposed_s: float  # communication not hidden: tensor + pipeline + exposed data parallel
    step_s: float  # compute + exposed communication


def parallel_busbw_bytes_per_s(fab: net.Fabric, tp: int, parallelism: str, ep: int = 1) -> tuple[float, str]:
    """Bus bandwidth one GPU sees for a parallelism's collectives on ``fab``, and which link it crosses.

    Megatron-style placement: tensor parallelism inside a node; data-parallel ranks next
    (g / tp of them per node); pipeline stages across nodes. A node is one scale-up
    domain: 8 GPUs of a DGX, 72 of an NVL72 rack (``mlcalc.network.scale_up_domain``).

    - tensor: NVLink, ring.
    - data: if the data-parallel group stays in a node, NVLink; else each node holds
      g/tp members of each of tp groups that run at once, so each group's rings get
      1/tp of the node's network: min(NVLink, node / tp). With tp = 1 that is the whole
      node (one ring per NIC, the NCCL behaviour); with tp = g, each GPU's NIC share.
    - pipeline: across nodes every GPU of a stage sends to its peer at once, each
      through its share of the NICs (node / g); inside a node, NVLink.
    - expert: the all-to-all among ``ep`` expert-parallel ranks, placed next to the
      tensor-parallel ones: on NVLink while tp x ep GPUs fit in the scale-up domain,
      else every GPU sends through its own NIC share at once (node / g).
    """
    _check.choice("parallelism", parallelism, ("tensor", "data", "pipeline", "expert"))
    tp = _check.positive_int("tp", tp)
    ep = _check.positive_int("ep", ep)
    g = fab.gpus_per_node
    if tp > g:
        raise ValueError(f"tp={tp} is not allowed: it must fit in a node of {g} GPUs")
    intra, node = fab.intra_bytes_per_s, fab.node_inter_bytes_per_s
    if parallelism == "expert":
        if tp * ep <= g or fab.n_nodes == 1:
            return intra, "intra-node"
        return min(intra, node / g), "inter-node"
    if parallelism == "tensor" or fab.n_nodes == 1:
        return intra, "intra-node"
    if parallelism == "pipeline":
        return min(intra, node / g), "inter-node"
    return min(intra, node / tp), "inter-node"


def layout_budget(model: Workload, layout: GridLayout, fab: net.Fabric, global_batch: int, micro_batch: int,
                  flops_per_gpu: float, mfu: float = 0.5, dp_strategy: str = "ddp",
                  bytes_per_value: float = 2.0) -> Budget:
    """Per-step communication of a tp x pp x dp layout on a fabric, against compute.

    Tensor parallelism runs inside a node (NVLink); pipeline and data parallelism cross
    nodes once the layout spans more than one node, at the rates of
    :func:`parallel_busbw_bytes_per_s` (a data-parallel ring across nodes gets the node's
    whole network divided among the tp groups that share it, not one GPU's NIC share).
    Tensor and pipeline traffic is counted as exposed; the gradient traffic of data
    parallelism may hide behind the backward pass.
    """
    if not isinstance(layout, GridLayout):
        layout = GridLayout(*layout)
    global_batch = _check.positive_int("global_batch", global_batch)
    b = _check.positive_int("micro_batch", micro_batch)
    if global_batch % (b * layout.dp):
        raise ValueError(f"global_batch={global_batch!r} is not allowed: it must be a multiple of "
                         f"micro_batch x dp = {b * layout.dp}")
    if layout.tp > fab.gpus_per_node:
        raise ValueError(f"tp={layout.tp} is not allowed: it must fit in a node of {fab.gpus_per_node} GPUs")
    n_micro = global_batch // (b * layout.dp)
    n_gpus = layout.tp * layout.pp * layout.dp
    if n_gpus != fab.n_ranks:
        raise ValueError(f"n_nodes={fab.n_nodes!r} is not allowed: the layout needs {n_gpus} GPUs, "
                         f"the fabric has {fab.n_ranks}")
    crosses = fab.n_nodes > 1

    def timed(ops: tuple[Op, ...], parallelism: str, lat: float) -> tuple[float, float, str]:
        bw, where = parallel_busbw_bytes_per_s(fab, layout.tp, parallelism)
        wire = sum(wire_bytes(o) for o in ops)
        t = sum(o.count * net.collective_time(o.message_bytes, o.group, _ring_bw(o, bw, where), o.collective, "ring",
                                              lat, fab.base_latency_s).time_s for o in ops if o.group > 1)
        return wire, t, where

    def _ring_bw(o: Op, bw: float, where: str) -> float:
        """Inside a node NCCL's ring kernel on its channels, where the fabric's link stores them; else the link's rate."""
        return net.in_node_ring_busbw_bytes_per_s(fab, o.collective, o.group, bw) if where == "intra-node" else bw

    lat_in = fab.intra_step_latency_s
    lat_out = fab.inter_step_latency_s if crosses else lat_in
    lines = []
    if layout.tp > 1:
        ops = tensor_parallel_ops(model, layout.tp, b, n_micro, math.ceil(model.n_layers / layout.pp),
                                  bytes_per_value=bytes_per_value)
        wire, t, where = timed(ops, "tensor", lat_in)
        lines.append(CommLine("tensor", where, wire, t))
    if layout.pp > 1:
        ops = pipeline_parallel_ops(model, b, n_micro, bytes_per_value)
        wire, t, where = timed(ops, "pipeline", lat_out)
        lines.append(CommLine("pipeline", where, wire, t))
    dp_s = 0.0
    if layout.dp > 1:
        ops = data_parallel_ops(model.n_params / (layout.tp * layout.pp), layout.dp, dp_strategy, bytes_per_value)
        dp_crosses = crosses and layout.dp * layout.tp > fab.gpus_per_node
        if dp_crosses:
            wire, dp_s, where = timed(ops, "data", lat_out)
        else:
            wire, dp_s, where = timed(ops, "tensor", lat_in)
        lines.append(CommLine("data", where, wire, dp_s))
    compute = step_compute_s(model.n_params, global_batch * model.seq_len, n_gpus, flops_per_gpu, mfu)
    ov = overlap(dp_s, compute)
    exposed = sum(line.time_s for line in lines if line.parallelism != "data") + ov.exposed_s
    return Budget(layout, tuple(lines), compute, ov, exposed, compute + exposed)


__all__ = [
    "BACKWARD_SHARE", "COLLECTIVES_USED", "DP_STRATEGIES", "FLOPS_PER_PARAM_PER_TOKEN", "MAX_MICRO_BATCHES",
    "MAX_LAYERS", "MAX_SLOTS", "MAX_STAGES", "NARAYANAN_TABLE1",
    "SCHEDULES", "Budget", "CommLine", "GridLayout", "Op", "Overlap", "Slot", "Timeline", "Workload", "bubble_fraction",
    "data_parallel_ops", "expert_parallel_ops", "layout_budget", "overlap", "parallel_busbw_bytes_per_s",
    "pipeline_parallel_ops",
    "pipeline_schedule", "reference_model", "step_compute_s", "suggest_layout", "tensor_parallel_ops", "wire_bytes",
]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
