"""Plan a whole training run: from a model, tokens, a deadline and a budget to hardware, layout, days and dollars.

Every number comes from the book's other modules; this one only joins them:

- memory decides the layout (``mlcalc.memory.training_memory``: a tp x pp x dp layout with ZeRO-1
  and selective or full recomputation that fits the device);
- the one step-time engine (``mlcalc.steptime.predict_step``) gives each layout's step: the products
  at the shapes one GPU of the layout runs, attention, element-wise work and the optimizer, the
  collectives on the node's links (``mlcalc.network``) and the bubble of the pipeline schedule; hence
  the MFU (PaLM's FLOP count) and the tokens per second;
- failures at the count's rate decide the checkpoint interval (Young/Daly, ``mlcalc.storage``) and
  the goodput; these give the days, the GPU-hours and the dollars;
- ``mlcalc.facility`` gives the power at the meter, racks, energy, electricity and emissions of each plan;
- ``mlcalc.network.fat_tree_counts`` gives the switches and cables, ``mlcalc.storage`` the read rate,
  the checkpoint size and write time and the capacity.

The search (:func:`search`) is exhaustive over a stated, bounded set: every count of
:func:`candidate_counts` (whole nodes whose count has at most three significant binary digits,
plus the reader's own cap; at most :data:`MAX_COUNTS` per chip) and, for each count, every layout
of :func:`layout_candidates` that fits memory. It returns the cheapest plan that meets the
deadline and the budget and the fastest one; a test compares it with brute force on small cases.
Base units: FLOP, bytes, seconds, dollars.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple

from mlcalc import _check
from mlcalc import compute, facility, failures, memory, network, parallel, steptime, storage
from mlcalc.accelerators import spec
from mlcalc.units import HOURS_PER_YEAR, SECONDS_PER_DAY, SECONDS_PER_HOUR, duration, fixed, sig

# Hoffmann et al. 2022 ("Chinchilla"): compute-optimal training uses about 20 tokens per parameter.
CHINCHILLA_TOKENS_PER_PARAM = 20.0

# The largest cluster the planner considers. Any count up to it may be evaluated; the search tries the
# counts of candidate_counts (at most MAX_COUNTS per chip).
MAX_GPUS = 65536
# 8 x 2^k GPUs: the counts the book's tables and exercises use (any other count is allowed too).
GPU_COUNTS: tuple[int, ...] = tuple(8 * 2**k for k in range(14))  # 8 ... 65,536
SIGNIFICANT_BITS = 3  # node counts the search tries: 1-8, then 4 per doubling (10, 12, 14, 16, 20, ...)
# Bounds on a caller's inputs (far above any real run, far below overflow).
MAX_TOKENS = 1e16  # 640 x Llama 3's 15.6T tokens
MAX_SEQ_LEN = 2**20
MAX_BATCH_TOKENS = 1e10
MAX_PRICE_PER_GPU_HOUR = 1e4  # USD
MAX_PURCHASE_PER_GPU = 1e8  # USD
MAX_TERM_YEARS = 10.0
MAX_GPUS_PER_NODE = 1024
MAX_PIPELINE = 128  # most pipeline stages tried
SWITCH_RADIX = 64  # ports of one InfiniBand NDR switch (NVIDIA QM9700: 64 x 400 Gb/s)
CHECKPOINTS_KEPT = 5  # full checkpoints kept on disk for the capacity estimate (an assumption)

# Which chapter computes each number (the notebooks link these).
CHAPTERS: Mapping[str, str] = MappingProxyType({
    "tokens": "notebooks/accelerators/training-cost",
    "memory": "notebooks/memory/training-fit",
    "layout": "notebooks/network/parallelism-communication",
    "step": "notebooks/hardware/predictions",
    "flops": "notebooks/accelerators/catalogue",
    "network": "notebooks/network/topology",
    "read": "notebooks/storage/io-needs-and-dataloader",
    "checkpoint": "notebooks/storage/checkpoints",
    "capacity": "notebooks/storage/capacity-and-small-files",
    "cost": "notebooks/plan/rent-hpc-buy",
    "facility": "notebooks/facility/power-and-energy",
    "failures": "notebooks/facility/failures-at-scale",
})


# --------------------------------------------------------------------------- data


@lru_cache(maxsize=None)
def data() -> Mapping[str, Any]:
    """The planner's inputs in ``data/plan.json`` (prices, ownership costs, published runs), read-only."""
    return MappingProxyType(json.loads(resources.files("mlcalc.data").joinpath("plan.json").read_text()))


def default(name: str) -> float:
    """A default from the ``ownership`` or ``failures`` tables of plan.json, by name."""
    for table in ("ownership", "failures"):
        if name in data()[table]:
            return float(data()[table][name]["value"])
    raise ValueError(f"name={name!r} is not allowed: choose one of "
                     f"{sorted(list(data()['ownership']) + list(data()['failures']))}")


WAYS = ("rent", "hpc", "buy")
TERMS = (("on demand", "on_demand", 0.0), ("1-year commitment", "one_year", 1.0),
         ("3-year commitment", "three_year", 3.0))  # (label, prices-table key, years)


class Offer(NamedTuple):
    """A way to get accelerators: which chip, how (rent, HPC allocation, buy) and at what price."""

    name: str  # label, e.g. "H100 rent (AWS Capacity Block)"
    chip: str  # catalogue key, e.g. "H100-SXM"
    way: str  # "rent", "hpc" or "buy"
    price_per_gpu_hour: float  # rent and hpc: dollars per GPU-hour (buy: 0, see TCO)
    purchase_per_gpu: float  # buy: dollars per GPU, its share of the node (else 0)
    source: str  # where the price comes from
    term_years: float = 0.0  # a commitment's term: every hour of each whole term is billed (0: hours held)
    date: str = ""  # when the price was listed
    subsidised: bool = False  # a rate below cost that only some readers get (academic): offered on request


def _chip_label(chip: str) -> str:
    return chip.split("-")[0]


@lru_cache(maxsize=None)
def offers() -> Mapping[str, Offer]:
    """Every priced offer, by name: plan.json's ``offers``, then the ``prices`` table's on-demand and
    committed cloud prices per chip (per GPU-hour = the instance's price / its GPUs)."""
    out = {}
    for name, o in data()["offers"].items():
        if name == "fields":
            continue
        out[name] = Offer(name, o["chip"], o["way"], float(o.get("price_per_gpu_hour", 0.0)),
                          float(o.get("purchase_per_gpu", 0.0)), o["source"], 0.0, o.get("date", ""),
                          bool(o.get("subsidised", False)))
    for chip, row in data()["prices"].items():
        if chip == "fields":
            continue
        family = row["instance"].split(".")[0]
        for label, key, years in TERMS:
            price = row["instance_per_hour"][key]
            if price is None:
                continue
            name = f"{_chip_label(chip)} rent {label} (AWS {family})"
            out[name] = Offer(name, chip, "rent", float(price) / int(row["gpus_per_instance"]), 0.0, row["source"],
                              years, row["date"])
    return MappingProxyType(out)


def check_offer(offer: Any) -> Offer:
    """A caller's :class:`Offer`, every field checked (ValueError naming the field, its value and what is allowed)."""
    if not isinstance(offer, Offer):
        raise ValueError(f"offer={_check._fmt(offer)} is not allowed: give an mlcalc.plan.Offer "
                         "(or a name of mlcalc.plan.offers())")
    for field in ("name", "source", "date"):
        if not isinstance(getattr(offer, field), str):
            raise ValueError(f"offer.{field}={_check._fmt(getattr(offer, field))} is not allowed: it must be text")
    _check.choice("offer.chip", offer.chip, chips())
    _check.choice("offer.way", offer.way, WAYS)
    _check.non_negative("offer.price_per_gpu_hour", offer.price_per_gpu_hour, MAX_PRICE_PER_GPU_HOUR)
    _check.non_negative("offer.purchase_per_gpu", offer.purchase_per_gpu, MAX_PURCHASE_PER_GPU)
    _check.non_negative("offer.term_years", offer.term_years, MAX_TERM_YEARS)
    if not isinstance(offer.subsidised, bool):
        raise ValueError(f"offer.subsidised={_check._fmt(offer.subsidised)} is not allowed: it must be True or False")
    return offer


def chips() -> tuple[str, ...]:
    """The chips the planner knows (plan.json ``chips``): a system, board and node power each."""
    return _chips()


@lru_cache(maxsize=1)
def _chips() -> tuple[str, ...]:
    return tuple(k for k in data()["chips"] if k != "fields")


def offered_chips() -> tuple[str, ...]:
    """The chips at least one offer sells (a chip no offer has would be a choice that always fails)."""
    have = {o.chip for o in offers().values()}
    return tuple(c for c in chips() if c in have)


def _check_model(model: Any) -> memory.ModelConfig:
    if not isinstance(model, memory.ModelConfig):
        raise ValueError(f"model={_check._fmt(model)} is not allowed: give an mlcalc.memory.ModelConfig "
                         "(e.g. mlcalc.memory.model_preset('Llama-3 8B'))")
    return model


def chip_info(chip: str) -> Mapping[str, Any]:
    """System (plan.json ``chips``), board power and node power of a chip the planner knows: the power is
    facility.json's, of the system :data:`FACILITY_SYSTEM` houses the chip in (one home for a system's power)."""
    _check.choice("chip", chip, chips())
    return _chip_info(chip)


@lru_cache(maxsize=64)
def _chip_info(chip: str) -> Mapping[str, Any]:
    housed = facility.system(FACILITY_SYSTEM[chip])
    return MappingProxyType({**data()["chips"][chip], "board_power_w": housed.board_power_w,
                             "node_power_kw": housed.power_kw})


def chinchilla_tokens(n_params: float) -> float:
    """Compute-optimal training tokens: 20 per parameter (Hoffmann et al. 2022).

    The paper's own Chinchilla: 70B parameters on 1.4T tokens:

    >>> chinchilla_tokens(70e9) / 1e12
    1.4
    """
    return CHINCHILLA_TOKENS_PER_PARAM * _check.positive("n_params", n_params)


# --------------------------------------------------------------------------- step-time model


#: The framework the planner assumes a large run trains with: Megatron-LM-style (bf16 weights, fused
#: kernels, the host hidden behind the GPU), as the step-time engine :func:`mlcalc.steptime.predict_step`
#: models it.
ENGINE = "megatron"

RECOMPUTE_FACTOR = {"selective": 1.0, "full": 8.0 / 6.0}  # extra forward pass: 6N -> 8N per token


def flops_per_token(model: memory.ModelConfig, seq_len: int) -> float:
    """Model FLOP per token in the book's one convention, PaLM's ``6 N + 12 L H Q T`` (Chowdhery et al.
    2022, Appendix B; :func:`mlcalc.compute.palm_flops_per_token`): what the planner's MFU counts."""
    return compute.palm_flops_per_token(_check_model(model), _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN))


@lru_cache(maxsize=1024)
def _flops_per_token(model: memory.ModelConfig, s: int) -> float:
    """FLOP per token a step executes at least: ``6 N_active + 6 L s h`` (causal attention does half of
    PaLM's 12 L H Q T; :func:`mlcalc.compute.executed_flops_per_token`). Used only for floors
    (:func:`step_time_floor`, the search's skip)."""
    return compute.executed_flops_per_token(model, s)


class PlannedLayout(NamedTuple):
    """A parallel layout the planner chose and what one training step costs on it (the engine's input is
    :class:`mlcalc.steptime.Layout`)."""

    tp: int  # tensor-parallel size (inside a node)
    pp: int  # pipeline stages
    dp: int  # data-parallel replicas (ZeRO-1 over them)
    micro_batch: int  # sequences per micro-batch
    n_micro: int  # micro-batches per replica per step
    recompute: str  # "selective" or "full" activation recomputation
    memory_bytes: float  # per-GPU memory of the layout (mlcalc.memory.training_memory)
    compute_s: float  # matmul-rate compute of one step, recomputation included
    bubble_s: float  # pipeline bubble: (pp - 1) / n_micro of the compute
    comm_s: float  # exposed communication: tensor + pipeline + data parallel not hidden
    step_s: float  # compute + bubble + exposed communication
    virtual_stages: int = 1  # layer chunks per GPU: > 1 runs the interleaved 1F1B schedule, 1 plain 1F1B


INTERLEAVE = (1, 2, 4)  # virtual stages per GPU tried with the interleaved 1F1B schedule


@lru_cache(maxsize=4096)
def _bubble(pp: int, n_micro: int, n_layers: int) -> float:
    """Smallest pipeline bubble of 1F1B, or interleaved 1F1B with v in INTERLEAVE virtual stages.

    Interleaving (Narayanan et al. 2021) needs the micro-batches to be a multiple of the stages
    and at least v layers per stage; it divides the bubble by v (its extra point-to-point traffic
    is not counted here).
    """
    best = parallel.bubble_fraction(pp, n_micro)
    for v in INTERLEAVE[1:]:
        if n_micro % pp == 0 and n_layers // pp >= v:
            best = min(best, parallel.bubble_fraction(pp, n_micro, v))
    return best


@lru_cache(maxsize=256)
def _parallel_model(model: memory.ModelConfig, seq_len: int) -> parallel.Workload:
    return parallel.Workload(model, seq_len)


@lru_cache(maxsize=1024)
def _fabric(system_key: str, nodes: int, gpus_per_node: int) -> network.Fabric:
    return network.fabric(system_key, nodes, gpus_per_node=gpus_per_node)


@lru_cache(maxsize=64)
def _step_rate(chip: str, flops_source: str) -> float:
    """A rate no step of the engine beats: the chip's achievable matmul rate (the engine's products run at
    the book's measured shape rates carried over by it, below it; everything else only adds time)."""
    return compute.achievable_flops(chip, "bf16", flops_source)


# --------------------------------------------------------------------------- the step time (one function)
#
# The step-time model's part of the planner is three private functions, each with a checked public twin:
# _fit (layout_memory: which recomputation fits), _step_time (step_time: the step of a fitting layout)
# and _step_floor (step_time_floor: a lower bound of _step_time, used only to stop the layout visit early;
# 0.0 is always a valid floor, only slower). tests/core/test_plan.py compares _best_layout and search with
# brute force over layout_candidates, layout_memory and step_time, and checks the floor on random layouts.
# The search skips a count only when tokens x FLOPs per token / (GPUs x _step_rate) already misses the
# deadline: _step_rate must be at least the rate any layout's step reaches.


class StepTime(NamedTuple):
    """One training step of a layout: the parts the step time is made of."""

    compute_s: float  # compute, recomputation included
    bubble_s: float  # pipeline bubble
    comm_s: float  # exposed communication

    @property
    def step_s(self) -> float:
        return self.compute_s + self.bubble_s + self.comm_s


def _check_layout(model: Any, chip: Any, n_gpus: Any, tp: Any, pp: Any, dp: Any, n_micro: Any, recompute: Any,
                  seq_len: Any, flops_source: Any) -> tuple:
    _check_model(model)
    _check.choice("chip", chip, chips())
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    tp = _check.positive_int("tp", tp, n)
    pp = _check.positive_int("pp", pp, n)
    dp = _check.positive_int("dp", dp, n)
    if tp * pp * dp != n:
        raise ValueError(f"tp x pp x dp={tp * pp * dp!r} is not allowed: it must equal n_gpus={n}")
    m = _check.positive_int("n_micro", n_micro, 10**7)
    _check.choice("recompute", recompute, tuple(RECOMPUTE_FACTOR))
    s = _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN)
    _check.choice("flops_source", flops_source, ("achievable", "measured"))
    return model, chip, n, tp, pp, dp, m, recompute, s, flops_source


def step_time_floor(model: memory.ModelConfig, chip: str, n_gpus: int, tp: int, pp: int, dp: int, n_micro: int,
                    recompute: str, seq_len: int, flops_source: str = "achievable") -> float:
    """A lower bound of :func:`step_time` for the same layout, without its communication.

    The layout search visits layouts in increasing order of this floor and stops at the first whose
    floor is no shorter than the best step found: exact as long as ``floor <= step_time(...).step_s``
    for every layout (tests check it on random layouts).
    """
    return _check.result("step_time_floor", _step_floor(*_check_layout(model, chip, n_gpus, tp, pp, dp, n_micro,
                                                                       recompute, seq_len, flops_source)))


def _step_floor(model: memory.ModelConfig, chip: str, n_gpus: int, tp: int, pp: int, dp: int, n_micro: int,
                recompute: str, seq_len: int, flops_source: str) -> float:
    rate = _step_rate(chip, flops_source)
    compute_s = _flops_per_token(model, seq_len) * dp * n_micro * seq_len * RECOMPUTE_FACTOR[recompute] / (n_gpus * rate)
    return compute_s * (1.0 + (_bubble(pp, n_micro, model.n_layers) if pp > 1 else 0.0))


def step_time(model: memory.ModelConfig, chip: str, n_gpus: int, tp: int, pp: int, dp: int, n_micro: int,
              recompute: str, seq_len: int, flops_source: str = "achievable", virtual_stages: int = 0) -> StepTime:
    """Step time of one layout (micro-batch 1, ZeRO-1): compute, pipeline bubble, exposed communication.

    From the one step-time engine, :func:`mlcalc.steptime.predict_step` (``engine="megatron"``, the chip's
    machine, the node's links): compute is every kernel of the step (recomputation, host and optimizer
    included); bubble: the schedule's, ``virtual_stages`` as :func:`engine_layout` takes it (0: interleaved
    with the most chunks where it applies, else 1F1B); communication: what the engine's rules leave exposed
    (tensor-parallel collectives, pipeline sends, the data-parallel reduction beyond the last backward pass).
    """
    v = _check.non_negative_int("virtual_stages", virtual_stages, max(INTERLEAVE))
    model, chip, n, tp, pp, dp, m, recompute, s, flops_source = _check_layout(model, chip, n_gpus, tp, pp, dp, n_micro,
                                                                              recompute, seq_len, flops_source)
    return _check.fields("step_time", _step_time(model, chip, n, tp, pp, dp, m, recompute, s, flops_source, v))


@lru_cache(maxsize=4096)
def _virtuals(pp: int, n_micro: int, n_layers: int) -> tuple[int, ...]:
    """The virtual stages of INTERLEAVE the interleaved schedule allows (Narayanan et al. 2021: the
    micro-batches a multiple of the stages, at least v layers per stage), most first; 1: plain 1F1B."""
    if pp == 1 or n_micro % pp:
        return (1,)
    return tuple(sorted((v for v in INTERLEAVE if v == 1 or n_layers // pp >= v), reverse=True))


def _interleave(pp: int, n_micro: int, n_layers: int) -> int:
    """Most virtual stages of INTERLEAVE the interleaved schedule allows; 1: plain 1F1B."""
    return _virtuals(pp, n_micro, n_layers)[0]


def engine_layout(tp: int, pp: int, dp: int, n_micro: int, recompute: str, n_layers: int,
                  micro_batch: int = 1, virtual_stages: int = 0) -> steptime.Layout:
    """The planner's layout as the engine's: ZeRO-1 over dp, sequence parallelism with tp, and ``virtual_stages``
    layer chunks per GPU (0: the most the interleaved schedule allows, its smallest bubble as :func:`_bubble`;
    1: plain 1F1B)."""
    args = (tp, pp, dp, n_micro, recompute, n_layers, micro_batch, virtual_stages)
    try:
        return _engine_layout_of(*args)
    except TypeError:  # an input that cannot be a key
        return _engine_layout_of.__wrapped__(*args)


# A Layout is frozen: one object serves every caller of the same arguments (a search asks for each layout on every
# chip, and its memory and its step both build it). Remembered (typed: 2 and 2.0 are different keys), 8,192 kept.
@lru_cache(maxsize=8192, typed=True)
def _engine_layout_of(tp: int, pp: int, dp: int, n_micro: int, recompute: str, n_layers: int, micro_batch: int,
                      virtual_stages: int) -> steptime.Layout:
    n_layers = _check.positive_int("n_layers", n_layers, 10**6)
    pp = _check.positive_int("pp", pp, MAX_GPUS)
    n_micro = _check.positive_int("n_micro", n_micro, 10**7)
    v = _interleave(pp, n_micro, n_layers) if virtual_stages == 0 else virtual_stages
    if v not in _virtuals(pp, n_micro, n_layers):
        raise ValueError(f"virtual_stages={virtual_stages!r} is not allowed: with pp={pp}, n_micro={n_micro} and "
                         f"{n_layers} layers it must be 0 (the most allowed) or one of {_virtuals(pp, n_micro, n_layers)}")
    return steptime.Layout(tp=tp, pp=pp, dp=dp, zero=1 if dp > 1 else 0, sequence_parallel=tp > 1,
                           schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v, recompute=recompute,
                           micro_batch=micro_batch, grad_accum=n_micro)


def _predict(model: memory.ModelConfig, chip: str, lay: steptime.Layout, seq_len: int) -> steptime.StepTiming:
    """The engine's step of a layout (:func:`mlcalc.steptime.predict_step`'s time, without its memory: the planner's
    own fit is :func:`_layout_memory`)."""
    system = network.system(chip_info(chip)["system"])
    return steptime.predict_step_time(model, lay, seq_len=seq_len, machine=chip, gpus_per_node=system.gpus_per_node,
                                      engine=ENGINE, system=system.key)


def _predict_all(model: memory.ModelConfig, chip: str, lay: steptime.Layout, seq_len: int) -> steptime.StepPrediction:
    """The engine's whole prediction of a layout (its memory included)."""
    system = network.system(chip_info(chip)["system"])
    return steptime.predict_step(model, lay, seq_len=seq_len, machine=chip, gpus_per_node=system.gpus_per_node,
                                 engine=ENGINE, system=system.key)


def _step_time(model: memory.ModelConfig, chip: str, n_gpus: int, tp: int, pp: int, dp: int, n_micro: int,
               recompute: str, seq_len: int, flops_source: str, virtual_stages: int = 0) -> StepTime:
    """The step-time engine's step (mlcalc.steptime.predict_step): every product at the shape one GPU of
    the layout runs, attention, element-wise work, the optimizer, the collectives on the node's links and
    the bubble of the schedule. ``flops_source`` only sets the floors."""
    p = _predict(model, chip, engine_layout(tp, pp, dp, n_micro, recompute, model.n_layers,
                                            virtual_stages=virtual_stages), seq_len)
    return StepTime(p.step_s - p.bubble_s - p.comm_exposed_s, p.bubble_s, p.comm_exposed_s)


# --------------------------------------------------------------------------- layouts


def _pipeline_sizes(model: memory.ModelConfig) -> list[int]:
    return list(_pipeline_sizes_of(model.n_layers))


@lru_cache(maxsize=256)
def _pipeline_sizes_of(n_layers: int) -> tuple[int, ...]:
    top = min(n_layers, MAX_PIPELINE)
    return tuple(sorted({p for p in range(1, top + 1) if n_layers % p == 0} | {2**k for k in range(8) if 2**k <= top}))


def _batch_seqs(global_batch_tokens: float, seq_len: int) -> int:
    return max(1, int(round(global_batch_tokens / seq_len)))


def layout_candidates(model: memory.ModelConfig, chip: str, n_gpus: int, seq_len: int,
                      global_batch_tokens: float) -> tuple[tuple[int, int, int, int], ...]:
    """Every (tp, pp, dp, micro-batches) the planner considers for ``n_gpus`` chips, before memory.

    tp a power of two inside the system's scale-up domain (1, 2, 4, 8 on a DGX; up to 64 in an
    NVL72 rack: ``network.parallel_degrees_inside``), dividing the heads; pp over the divisors of the layer count
    and the powers of two up to :data:`MAX_PIPELINE`; ``dp = n / (tp pp)`` whole and at most the
    sequences of the global batch; micro-batch 1, so the batch is rounded to ``dp x m`` sequences.
    At most 11 x (MAX_PIPELINE + 8) layouts (a scale-up domain of at most 1,024 GPUs).
    """
    _check_model(model)
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    s = _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN)
    sys_key = chip_info(chip)["system"]
    batch_seqs = _batch_seqs(_check.positive("global_batch_tokens", global_batch_tokens, MAX_BATCH_TOKENS), s)
    return _candidates(model.n_heads, model.n_layers, sys_key, n, batch_seqs)


@lru_cache(maxsize=4096)
def _candidates(n_heads: int, n_layers: int, sys_key: str, n: int, batch_seqs: int) -> tuple[tuple[int, int, int, int], ...]:
    """:func:`layout_candidates` of checked arguments (remembered: the chips of one system share them)."""
    gpn = network.system(sys_key).gpus_per_node
    out = []
    for tp in network.parallel_degrees_inside(sys_key):  # (1, 2, 4, 8) on a DGX; up to 64 in an NVL72 rack
        if tp > gpn or n_heads % tp or n % tp:
            continue
        for pp in _pipeline_sizes_of(n_layers):
            if n % (tp * pp):
                continue
            dp = n // (tp * pp)
            if dp > batch_seqs:
                continue
            out.append((tp, pp, dp, max(1, round(batch_seqs / dp))))
    return tuple(out)


def layout_memory(model: memory.ModelConfig, chip: str, tp: int, pp: int, dp: int, seq_len: int,
                  recompute: str, n_micro: int = 0, virtual_stages: int = 0) -> memory.TrainingFit:
    """Per-GPU memory of a layout (ZeRO-1, micro-batch 1): the step-time engine's
    (:func:`mlcalc.steptime.training_fit`, the training-fit chapter's model); uneven stages count the
    fullest one. With ``n_micro`` micro-batches a step, the layout as :func:`engine_layout` runs it
    (``virtual_stages`` as it takes them): the pipeline ranks hold what that schedule keeps in flight for
    that many micro-batches (:func:`mlcalc.memory.pipeline_in_flight`); ``n_micro=0``: 1F1B's steady state
    (the most it holds, for a layout whose micro-batches are not known)."""
    _check_model(model)
    _check.choice("chip", chip, chips())
    tp = _check.positive_int("tp", tp, MAX_GPUS)
    pp = _check.positive_int("pp", pp, min(model.n_layers, MAX_PIPELINE))
    dp = _check.positive_int("dp", dp, MAX_GPUS)
    _check.choice("recompute", recompute, tuple(RECOMPUTE_FACTOR))
    m = _check.non_negative_int("n_micro", n_micro, 10**7)
    v = _check.non_negative_int("virtual_stages", virtual_stages, max(INTERLEAVE))
    if m == 0 and v > 1:
        raise ValueError(f"virtual_stages={virtual_stages!r} is not allowed with n_micro=0: interleaving needs the "
                         "micro-batch count (0 or 1 there)")
    if m:
        v = v or _interleave(pp, m, model.n_layers)
        if v not in _virtuals(pp, m, model.n_layers):
            engine_layout(tp, pp, dp, m, recompute, model.n_layers, virtual_stages=v)  # says why
    return _layout_memory(model, chip, tp, pp, dp, _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN), recompute,
                          m, v or 1)


def _layout_memory(model: memory.ModelConfig, chip: str, tp: int, pp: int, dp: int, seq_len: int,
                   recompute: str, n_micro: int = 0, v: int = 1) -> memory.TrainingFit:
    """The memory of (tp, pp, dp, recompute) run with ``n_micro`` micro-batches and ``v`` chunks per GPU
    (:func:`engine_layout`'s layout; ``n_micro=0``: 1F1B's steady state): :func:`mlcalc.steptime.training_fit`'s
    answer, of arguments checked here once."""
    lay = _memory_layout(tp, pp, dp, recompute, model.n_layers, n_micro, v)
    return memory._fit_on(steptime._training_held(model, lay, seq_len, ENGINE, not n_micro), _device_bytes(chip),
                          lay.zero)


def _memory_bytes(model: memory.ModelConfig, chip: str, tp: int, pp: int, dp: int, seq_len: int, recompute: str,
                  n_micro: int, v: int) -> float:
    """:func:`_layout_memory`'s total bytes (the same sum), without building its answer."""
    lay = _memory_layout(tp, pp, dp, recompute, model.n_layers, n_micro, v)
    return memory._total_on(steptime._training_held(model, lay, seq_len, ENGINE, not n_micro), _device_bytes(chip))


def _memory_layout(tp: int, pp: int, dp: int, recompute: str, n_layers: int, n_micro: int,
                   v: int) -> steptime.Layout:
    if n_micro:
        return engine_layout(tp, pp, dp, n_micro, recompute, n_layers, virtual_stages=v)
    return steptime.Layout(tp=tp, pp=pp, dp=dp, zero=1 if dp > 1 else 0, sequence_parallel=tp > 1, recompute=recompute)


def _fit(model: memory.ModelConfig, chip: str, tp: int, pp: int, dp: int, seq_len: int,
         n_micro: int) -> tuple[str, int, float] | None:
    """How the layout runs with ``n_micro`` micro-batches, as its memory allows: selective recomputation if it
    fits, else full; with each, the most virtual stages the interleaved schedule allows that fit (1: plain
    1F1B, which holds the fewest micro-batches in flight), else None: (recompute, virtual stages, bytes). What
    it finds to fit is remembered for the search's memory shortcut (:func:`_selective_fits`)."""
    virtuals = _virtuals(pp, n_micro, model.n_layers)
    whole = None  # the layout whatever its recomputation and chunks: where none of them fits at the most replicas
    if _fits_order_on:
        whole = (model, chip, seq_len, tp, pp, virtuals, tuple(_in_flight(pp, v, n_micro) for v in virtuals))
        if whole in _NONE:
            return None
    dev = _device_bytes(chip)
    skipped = 0
    for rc in ("selective", "full"):
        for i, v in enumerate(virtuals):
            key = None if whole is None else whole[:5] + (rc, v, whole[6][i])  # (_least_key's)
            least = None if key is None else _LEAST.get(key)
            if least is not None and least > dev:
                skipped += 1
                continue  # it does not fit with the most replicas any count gives it, so not with dp either
            total = _memory_bytes(model, chip, tp, pp, dp, seq_len, rc, n_micro, v)
            if least is not None and total < least:
                raise _FitsOrderFailed  # fewer replicas holding less: the premise does not hold
            if memory._fits_on(total, dev):
                if rc == "selective" and _fits_order_on:
                    _seen_fit(model, chip, tp, pp, dp, seq_len, n_micro, v)
                return rc, v, total
            if key is not None and least is None:  # (only for a layout that did not fit: its other counts may not)
                if len(_LEAST) >= _LEAST_MAX:
                    _LEAST.clear()
                least = _LEAST[key] = _memory_bytes(model, chip, tp, pp, MAX_GPUS // (tp * pp), seq_len, rc, n_micro,
                                                    v)
                if total < least:
                    raise _FitsOrderFailed
    if whole is not None and skipped == 2 * len(virtuals):
        if len(_NONE) >= _LEAST_MAX:
            _NONE.clear()
        _NONE.add(whole)
    return None


# The memory shortcut's other side (the same premise: a layout's memory does not grow with its replicas). With the
# most replicas any GPU count gives a (tp, pp), MAX_GPUS // (tp pp), a layout holds the least it can: where even that
# does not fit, no count of it fits, and its memory is not computed again (_fit). Checked where it is computed: a
# layout holding less than this least breaks the premise (_FitsOrderFailed: the shortcuts are switched off).
_LEAST: dict[tuple, float] = {}  # (model, chip, seq_len, tp, pp, recompute, v, in-flight count) -> bytes at most dp
_LEAST_MAX = 20000  # entries kept (a bounded cache: emptied when full)
_NONE: set[tuple] = set()  # the layouts (_fit's `whole`) none of whose recomputations and chunks has a least that fits


@lru_cache(maxsize=4096)
def _in_flight(pp: int, v: int, n_micro: int) -> int:
    """:func:`mlcalc.memory.in_flight_micro_batches` of ``v`` chunks (interleaved where v > 1, else 1F1B)."""
    return memory.in_flight_micro_batches(pp, "interleaved" if v > 1 else "1f1b", v, n_micro)


def _least_key(model: memory.ModelConfig, chip: str, tp: int, pp: int, s: int, rc: str, n_micro: int,
               v: int) -> tuple:
    """What a layout's memory depends on besides the replicas (its schedule's in-flight count, not n_micro)."""
    return (model, chip, s, tp, pp, rc, v, _in_flight(pp, v, n_micro))


@lru_cache(maxsize=64)
def _device_bytes(chip: str) -> float:
    return spec(chip).memory_bytes


def best_layout(model: memory.ModelConfig, chip: str, n_gpus: int, seq_len: int, global_batch_tokens: float,
                flops_source: str = "achievable") -> PlannedLayout | None:
    """The fastest layout of ``n_gpus`` chips that fits memory (None if none fits).

    Over :func:`layout_candidates`, each with selective recomputation if it fits, else full. Exact:
    candidates are visited by :func:`step_time_floor` and the visit stops when no later one can be
    faster (a test compares it with trying every candidate). Cached: a deadline, a budget or a price
    changes nothing here.
    """
    _check_model(model)
    _check.choice("chip", chip, chips())
    _check.choice("flops_source", flops_source, ("achievable", "measured"))
    return _best_layout(model, chip, _check.positive_int("n_gpus", n_gpus, MAX_GPUS),
                        _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN),
                        _check.positive("global_batch_tokens", global_batch_tokens, MAX_BATCH_TOKENS), flops_source)


# The layout search's second bound (exact, and checked on every layout it does evaluate). One micro-batch of a
# layout runs the same kernels and tensor-parallel collectives whatever the data-parallel degree and the
# number of micro-batches: they depend on the shapes one GPU runs (tp, the stage's layers, recomputation),
# so the engine's step is at least m x (that micro-batch) x (1 + the schedule's bubble fraction) (the
# data-parallel reduction, the pipeline sends and the optimizer only add). Nor do they depend on the chunks
# per GPU (v) the memory lets the layout interleave: the bound's bubble fraction is the smallest any allowed v
# gives (_bubble), so a layout memory keeps to fewer chunks (a larger bubble) stays above it, and the
# recomputation in the key is the one memory chose (the search bounds both). The first layout of each
# (model, chip, sequence, tp, pp, recomputation) the search evaluates gives that micro-batch's time; later
# layouts with the same shapes, at any GPU count, are skipped when this bound cannot beat the best step
# found so far (ties included: a skipped layout never replaces the best, as it would not have).
# Exact whatever the engine computes: every evaluated layout whose bound is known checks bound <= its step;
# if one ever fails (an engine whose micro-batch depends on dp or m), the bound is switched off, the cached
# layouts it helped choose are dropped and the search is redone without it.
# (model, chip, system, seq_len, tp) -> {(pp, recompute): one micro-batch's seconds}: by shapes first, so that a
# search looks a model up once per tp, not once per layout
_MICRO: dict[tuple, dict[tuple[int, str], float]] = {}
_MICRO_MAX = 20000  # entries kept (a bounded cache: emptied when full)
_micro_count = 0  # entries in _MICRO
_micro_version = 0  # moves on at every change of _MICRO, _DEPTHS and _CARRIED by _learn (a search's views are then taken again)
_MICRO_PARTS = ("forward (kernels and host)", "backward (kernels and host)", "tensor-parallel collectives")
_micro_bound_on = True


class _BoundFailed(Exception):
    """A layout's step came out below its micro-batch bound: the bound is not valid for this engine."""


# The layout search's memory shortcut (exact while its premise holds; checked). A layout's memory is its model
# states, which ZeRO-1 shards over the data-parallel replicas (nothing else in it grows with them), and the
# activations its pipeline schedule keeps in flight, which follow the schedule (v chunks per GPU) and the
# micro-batch count only through memory.in_flight_micro_batches (the count up to the schedule's steady state: the
# same held activations, whatever the replicas). So for the same model, chip, sequence, tp, pp, recomputation,
# v and in-flight count, a layout that fits at dp replicas fits at any more (tests/core/test_plan.py checks it on
# every model). Across the GPU counts of a search, the same (tp, pp) comes back at other dp and micro-batch counts:
# that selective recomputation with the most chunks allowed fits is then known without computing the memory
# (the first choice of _fit, so the same choice), which is computed only for the layouts the search evaluates --
# and checked there: if one ever does not fit where the premise says it does, the shortcut is switched off, the
# cached layouts it helped choose are dropped and the search is redone without it.
_FITS: dict[tuple, int] = {}  # (model, chip, seq_len, tp, pp, v, in-flight count) -> the fewest dp seen to fit
_FITS_MAX = 20000  # entries kept (a bounded cache: emptied when full)
_fits_order_on = True


class _FitsOrderFailed(Exception):
    """A layout said to fit by the memory shortcut does not: the premise does not hold for this memory model."""


def _fits_key(model: memory.ModelConfig, chip: str, tp: int, pp: int, s: int, n_micro: int, v: int) -> tuple:
    """What a layout's memory depends on besides the replicas (its schedule's in-flight count, not n_micro)."""
    return (model, chip, s, tp, pp, v, _in_flight(pp, v, n_micro))


def _selective_fits(model: memory.ModelConfig, chip: str, tp: int, pp: int, dp: int, s: int, n_micro: int) -> int:
    """The virtual stages selective recomputation is known to fit with at ``dp`` and ``n_micro`` (the most the
    schedule allows: it fitted there at no more replicas before), else 0."""
    if not _fits_order_on:
        return 0
    v = _interleave(pp, n_micro, model.n_layers)
    fewest = _FITS.get(_fits_key(model, chip, tp, pp, s, n_micro, v))
    return v if fewest is not None and dp >= fewest else 0


def _seen_fit(model: memory.ModelConfig, chip: str, tp: int, pp: int, dp: int, s: int, n_micro: int, v: int) -> None:
    """Selective recomputation fitted at ``dp`` with ``n_micro`` micro-batches and ``v`` chunks: remembered."""
    key = _fits_key(model, chip, tp, pp, s, n_micro, v)
    fewest = _FITS.get(key)
    if fewest is None and len(_FITS) >= _FITS_MAX:
        _FITS.clear()
    _FITS[key] = dp if fewest is None else min(fewest, dp)


def _micro_s(p: steptime.StepTiming, m: int) -> float | None:
    """Seconds of one micro-batch's kernels and tensor-parallel collectives of an evaluated step (None: the
    engine's parts do not say)."""
    try:
        return sum(p.parts_s[k] for k in _MICRO_PARTS) / m
    except (KeyError, TypeError):
        return None


# The micro-batch bound carried to a shape not yet evaluated (exact, and checked like the bound itself). A stage of
# l layers runs, per micro-batch, every product of its l layers (each layer's at the same shapes), their attention
# and element-wise work, their tensor-parallel collectives (each in proportion to l), and the output layer,
# embedding and loss (the same for every l): k(l) = a l + c with a, c >= 0 (megatron engine: no host time). Then for
# the same model, chip, sequence and tp, with l <= l' layers per stage, k(l) >= k(l') l / l' (a l + c >= a l + c l / l'),
# and with l >= l', k(l) >= k(l'). Full recomputation only adds work to selective's (a second forward, its
# collectives), so a selective micro-batch bounds a full one of the same shapes too. Only where every layer is of
# one kind (all dense or all mixture-of-experts): with a mix, a stage's share of expert layers moves with l.
# The carried bound is checked as the bound is: every evaluated layout checks it (_learn), and a failure switches
# the bound off and the search is redone without it. Tested on random layouts (tests/core/test_plan_speed.py).
_DEPTHS: dict[tuple, dict[tuple[int, str], float]] = {}  # (model, chip, system, seq_len, tp) -> {(pp, rc): seconds}
_CARRIED: dict[tuple, dict[tuple[int, str], float]] = {}  # the same shapes -> {(pp, rc): carried bound}, remembered


def _carried(key: tuple, n_layers: int) -> float:
    """A lower bound of the micro-batch of ``key`` from those known at other stage depths (0.0: none known)."""
    model, chip, system, s, tp, pp, rc = key
    if model.n_moe_layers not in (0, model.n_layers):
        return 0.0
    shape = (model, chip, system, s, tp)
    return _carried_at(_CARRIED.setdefault(shape, {}), shape, pp, rc, n_layers)


def _carried_at(memo: dict[tuple[int, str], float], shape: tuple, pp: int, rc: str, n_layers: int) -> float:
    """:func:`_carried` of (pp, rc) at ``shape``, whose remembered carried bounds are ``memo``."""
    if (pp, rc) in memo:
        return memo[(pp, rc)]
    here = -(-n_layers // pp)
    best = 0.0
    for (pp2, rc2), k2 in _DEPTHS.get(shape, {}).items():
        if rc2 != rc and not (rc == "full" and rc2 == "selective"):
            continue
        there = -(-n_layers // pp2)
        best = max(best, k2 * here / there if here <= there else k2)
    memo[(pp, rc)] = best
    return best


def _micro_bound(key: tuple, pp: int, m: int, n_layers: int) -> float:
    """The lower bound of a layout's step from its micro-batch (known, or carried from other stage depths: 0.0
    while none is)."""
    if not _micro_bound_on:
        return 0.0
    known = _MICRO.get(key[:5])
    k = None if known is None else known.get(key[5:])
    if k is None:
        k = _carried(key, n_layers)
        if not k:
            return 0.0
    return m * k * (1.0 + (_bubble(pp, m, n_layers) if pp > 1 else 0.0)) * (1.0 - 1e-9)


@lru_cache(maxsize=4096)
def _best_layout(model: memory.ModelConfig, chip: str, n: int, s: int, batch: float, flops_source: str) -> PlannedLayout | None:
    global _micro_bound_on, _fits_order_on, _micro_count, _micro_version
    for _ in range(3):  # each shortcut is switched off at most once
        try:
            return _best_layout_visit(model, chip, n, s, batch, flops_source)
        except _BoundFailed:
            _micro_bound_on = False
            _MICRO.clear()
            _DEPTHS.clear()
            _CARRIED.clear()
            _micro_count = 0
            _micro_version += 1
        except _FitsOrderFailed:
            _fits_order_on = False
            _FITS.clear()
            _LEAST.clear()
            _NONE.clear()
        _best_layout.cache_clear()
        _run_cached.cache_clear()
    return _best_layout_visit(model, chip, n, s, batch, flops_source)  # pragma: no cover - both are off by now


def _best_layout_visit(model: memory.ModelConfig, chip: str, n: int, s: int, batch: float,
                       flops_source: str) -> PlannedLayout | None:
    """The first layout, in the order of :func:`_step_floor`, whose step is the shortest of those that fit.

    Visited best-first by a lower bound of each step (the larger of the FLOP floor and the micro-batch bound),
    so the fastest is usually found first; the rest are skipped once their bound cannot beat it. Equal steps
    keep the layout earliest in floor order, as visiting them all in that order would."""
    L = model.n_layers
    # _step_floor and _micro_bound of every candidate, their shared factors taken once (the same arithmetic, in the
    # same order: the same floats): per (tp, pp, dp, m) the floor's 1 + bubble fraction, `grow`
    fpt, nr = _flops_per_token(model, s), n * _step_rate(chip, flops_source)
    sel_f, full_f = RECOMPUTE_FACTOR["selective"], RECOMPUTE_FACTOR["full"]
    grows = {}
    for tp, pp, dp, m in layout_candidates(model, chip, n, s, batch):
        grows[(tp, pp, dp, m)] = 1.0 + (_bubble(pp, m, L) if pp > 1 else 0.0)
    cands = sorted((fpt * dp * m * s * sel_f / nr * grow, tp, pp, dp, m) for (tp, pp, dp, m), grow in grows.items())
    system = chip_info(chip)["system"]

    mixed = model.n_moe_layers not in (0, L)  # nothing carried (_carried)
    views: dict[int, tuple] = {}  # tp -> (_micro_version, known micro-batches, carried memo, shape) at these shapes

    def micro(tp: int, pp: int, rc: str, m: int, grow: float) -> float:  # _micro_bound
        if not _micro_bound_on:
            return 0.0
        view = views.get(tp)
        if view is None or view[0] != _micro_version:  # (taken again after _learn changed what is known)
            shape = (model, chip, system, s, tp)
            view = views[tp] = (_micro_version, _MICRO.get(shape), None if mixed else _CARRIED.setdefault(shape, {}),
                                shape)
        known, memo = view[1], view[2]
        k = None if known is None else known.get((pp, rc))
        if k is None:
            if memo is None:
                return 0.0
            k = _carried_at(memo, view[3], pp, rc, L)
            if not k:
                return 0.0
        return m * k * grow * (1.0 - 1e-9)

    def bounds(i: int) -> tuple[float, float]:
        """A lower bound of candidate i's step whatever its recomputation, and the shortest step its known
        micro-batches promise (inf: none known)."""
        floor, tp, pp, dp, m = cands[i]
        grow = grows[(tp, pp, dp, m)]
        lowest, promise = math.inf, math.inf
        b = micro(tp, pp, "selective", m, grow)
        if b:
            promise = min(promise, b)
        lowest = min(lowest, max(b, floor))
        b = micro(tp, pp, "full", m, grow)
        if b:
            promise = min(promise, b)
        lowest = min(lowest, max(b, fpt * dp * m * s * full_f / nr * grow))
        return lowest, promise

    def bounds_all() -> list[tuple[float, float]]:
        """bounds(i) of every candidate, in one pass (the same arithmetic: micro() and bounds() written out)."""
        out = []
        inf = math.inf
        factor = 1.0 - 1e-9
        for floor, tp, pp, dp, m in cands:
            grow = grows[(tp, pp, dp, m)]
            b_sel = b_full = 0.0
            if _micro_bound_on:
                view = views.get(tp)
                if view is None or view[0] != _micro_version:
                    shape = (model, chip, system, s, tp)
                    view = views[tp] = (_micro_version, _MICRO.get(shape),
                                        None if mixed else _CARRIED.setdefault(shape, {}), shape)
                known, memo = view[1], view[2]
                k = None if known is None else known.get((pp, "selective"))
                if k is None and memo is not None:
                    k = memo.get((pp, "selective"))  # (_carried_at's remembered answer, else computed)
                    if k is None:
                        k = _carried_at(memo, view[3], pp, "selective", L)
                if k:
                    b_sel = m * k * grow * factor
                k = None if known is None else known.get((pp, "full"))
                if k is None and memo is not None:
                    k = memo.get((pp, "full"))
                    if k is None:
                        k = _carried_at(memo, view[3], pp, "full", L)
                if k:
                    b_full = m * k * grow * factor
            promise = b_sel if b_sel else inf
            if b_full:
                promise = min(promise, b_full)
            out.append((min(max(b_sel, floor), max(b_full, fpt * dp * m * s * full_f / nr * grow)), promise))
        return out

    best: PlannedLayout | None = None
    at = -1  # best's place in floor order

    def beaten(b: float, i: int) -> bool:  # a step of at least b, at place i, cannot replace the best
        return best is not None and (b > best.step_s or (b == best.step_s and i > at))

    def visit(i: int) -> None:
        nonlocal best, at
        floor, tp, pp, dp, m = cands[i]
        mem_bytes: float | None = None
        v = _selective_fits(model, chip, tp, pp, dp, s, m)
        if v:
            rc = "selective"  # its bytes only if this layout is evaluated
        else:
            fit = _fit(model, chip, tp, pp, dp, s, m)
            if fit is None:
                return
            rc, v, mem_bytes = fit
        key = (model, chip, system, s, tp, pp, rc)
        if beaten(max(_micro_bound(key, pp, m, L),
                      floor if rc == "selective" else _step_floor(model, chip, n, tp, pp, dp, m, rc, s, flops_source)), i):
            return
        if mem_bytes is None:
            mem = _layout_memory(model, chip, tp, pp, dp, s, rc, m, v)
            if not mem.fits:
                raise _FitsOrderFailed
            mem_bytes = mem.total_bytes
        p = _predict(model, chip, engine_layout(tp, pp, dp, m, rc, L, virtual_stages=v), s)
        t = StepTime(p.step_s - p.bubble_s - p.comm_exposed_s, p.bubble_s, p.comm_exposed_s)
        if _micro_bound_on:
            _learn(key, _micro_s(p, m), t.step_s, pp, m, L)
        if best is None or t.step_s < best.step_s or (t.step_s == best.step_s and i < at):
            best, at = PlannedLayout(tp, pp, dp, 1, m, rc, mem_bytes, t.compute_s, t.bubble_s, t.comm_s, t.step_s,
                                     v), i

    # First the layout whose known micro-batches promise the shortest step (a good best early prunes the
    # rest); then every one by its bound, skipped once the bound cannot beat the best. The order changes only
    # how soon the answer is found, not which it is.
    first = bounds_all()
    promise, guess = min(((p, i) for i, (_, p) in enumerate(first)), default=(math.inf, -1))
    if guess >= 0 and promise < math.inf:
        visit(guess)
    else:
        guess = -1
    seen = _micro_version
    for low, i in sorted((low, i) for i, (low, _) in enumerate(first)):  # by bound, ties in floor order
        if best is not None and low > best.step_s:
            break  # this bound and every later one is above the best step
        if i == guess or beaten(low if _micro_version == seen else max(low, bounds(i)[0]), i):
            continue  # (the bound again where micro-batches were learned since)
        visit(i)
    return best


def _learn(key: tuple, k: float | None, step_s: float, pp: int, m: int, n_layers: int) -> None:
    """Check the bound on an evaluated layout and remember its micro-batch (``k`` seconds) for its shapes.

    :class:`_BoundFailed` if the bound exceeds this step, or if the same shapes' micro-batch came out
    different at another data-parallel degree or micro-batch count (the bound's premise)."""
    global _micro_count, _micro_version
    if _micro_bound(key, pp, m, n_layers) > step_s:
        raise _BoundFailed
    if k is None:
        return
    shape, depth = key[:5], key[5:]
    known = _MICRO.get(shape, {}).get(depth)
    if known is not None:
        if abs(k - known) > 1e-9 * max(k, known):
            raise _BoundFailed
        return
    _micro_version += 1
    if _micro_count >= _MICRO_MAX:
        _MICRO.clear()
        _DEPTHS.clear()
        _CARRIED.clear()
        _micro_count = 0
    _MICRO.setdefault(shape, {})[depth] = k
    _micro_count += 1
    if len(_DEPTHS) >= _MICRO_MAX:
        _DEPTHS.clear()
        _CARRIED.clear()
    _DEPTHS.setdefault(shape, {})[depth] = k
    _CARRIED.pop(shape, None)  # the carried bounds of these shapes may rise
    if _micro_bound(key, pp, m, n_layers) > step_s:
        raise _BoundFailed


# --------------------------------------------------------------------------- failures, storage, network


def device_mtbf_s() -> float:
    """One GPU's mean time between job-stopping failures, from Llama 3's 54-day snapshot.

    419 unexpected interruptions in 54 days on 16,384 GPUs (Dubey et al. 2024, 3.3.4):
    ``16,384 x 54 days / 419`` = about 5.8 years per GPU (mlcalc.storage).
    """
    f = storage.data()["failures"]["llama3"]
    return storage.device_mtbf_from_observation(int(f["gpus"]), float(f["days"]) * SECONDS_PER_DAY,
                                                float(f["unexpected"]))


def _bytes_per_token_on_disk(vocab: int) -> float:
    key = "uint16 token ids (vocabulary < 65,536)" if vocab < 65536 else "int32 token ids"
    return storage.BYTES_PER_TOKEN[key]


class Needs(NamedTuple):
    """What the run needs around the GPUs."""

    nodes: int  # nodes of gpus_per_node
    switch_tiers: int  # fat-tree tiers (mlcalc.network.fat_tree_counts)
    switches: int  # switches of SWITCH_RADIX ports
    cables: int  # GPU-to-leaf and switch-to-switch links (transceivers / 2)
    read_bytes_per_s: float  # dataset read rate, whole job (token ids)
    dataset_bytes: float  # the token ids on disk
    checkpoint_bytes: float  # one full checkpoint (bf16 + fp32 weights + Adam: 14 B/param)
    checkpoint_write_s: float  # time to write one (mlcalc.storage.checkpoint_write_time)
    write_bytes_per_s: float  # effective write bandwidth
    capacity_bytes: float  # storage to buy: dataset + kept checkpoints over the usable fraction
    mtbf_s: float  # the job's mean time between failures (device MTBF / GPUs)
    interval_s: float  # Daly's checkpoint interval
    goodput: float  # share of wall time that advances training
    restart_s: float = 0.0  # one restart after an interruption, seconds (the sum of ``restart``'s parts)
    restart: failures.Restart | None = None  # its parts (mlcalc.failures.restart_time); None when a time was given


def _read_bytes_per_s(model: memory.ModelConfig, tokens_per_s: float) -> float:
    """The dataset read rate of a run at ``tokens_per_s``: the only part of :func:`needs` that follows the rate."""
    return tokens_per_s * _bytes_per_token_on_disk(model.vocab)


def needs(model: memory.ModelConfig, n_gpus: int, gpus_per_node: int, tokens_per_s: float, n_tokens: float,
          filesystem_write_bytes_per_s: float, node_storage_bytes_per_s: float,
          restart_s: float | None = None) -> Needs:
    """Network, storage and failure figures of a run of ``n_gpus`` at ``tokens_per_s``.

    A restart takes ``restart_s`` if given, else the failure model's parts for this run
    (:func:`mlcalc.failures.restart_time`): detect, replace, reschedule, warm up, and load this model's
    checkpoint back at the rate the run writes it (the filesystem, capped by its nodes' storage links).
    """
    _check_model(model)
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    gpn = _check.positive_int("gpus_per_node", gpus_per_node, MAX_GPUS_PER_NODE)
    tokens_per_s = _check.positive("tokens_per_s", tokens_per_s, 1e15)
    n_tokens = _check.positive("n_tokens", n_tokens, MAX_TOKENS)
    filesystem_write_bytes_per_s = _check.positive("filesystem_write_bytes_per_s", filesystem_write_bytes_per_s, 1e15)
    node_storage_bytes_per_s = _check.positive("node_storage_bytes_per_s", node_storage_bytes_per_s, 1e15)
    restart_s = None if restart_s is None else _check.non_negative("restart_s", restart_s, 1e7)
    nodes = max(1, math.ceil(n / gpn))
    if n > gpn:
        counts = network.fat_tree_counts(n, SWITCH_RADIX)
        tiers, switches, cables = counts.tiers, counts.switches, counts.transceivers // 2
    else:  # one node: NVLink only, no switch
        tiers = switches = cables = 0
    read = _read_bytes_per_s(model, tokens_per_s)
    dataset = n_tokens * _bytes_per_token_on_disk(model.vocab)
    ckpt = storage.checkpoint_size(float(model.n_params())).total_bytes
    write = storage.checkpoint_write_time(ckpt, filesystem_write_bytes_per_s, nodes, node_storage_bytes_per_s)
    # The job's MTBF from Llama 3's interruptions by cause, each scaled by the GPUs or nodes it lives in
    # (mlcalc.failures; on 8-GPU nodes it equals the device MTBF / GPUs).
    mtbf = failures.interruptions(n, 1.0, gpn).mtbf_s
    interval = storage.daly_interval_s(write.seconds, mtbf)
    restart = None
    if restart_s is None:  # the failure model's parts for this checkpoint, read back at the rate it is written
        restart = failures.restart_time(ckpt, write.effective_bytes_per_s)
        r_s = restart.total_s
    else:
        r_s = restart_s
    gp = storage.goodput(interval, write.seconds, mtbf, r_s)
    cap = storage.storage_capacity(dataset, ckpt, CHECKPOINTS_KEPT)
    return Needs(nodes, tiers, switches, cables, read, dataset, ckpt, write.seconds,
                 write.effective_bytes_per_s, cap.to_buy_bytes, mtbf, interval, gp.fraction, r_s, restart)


# --------------------------------------------------------------------------- cost of owning


class Tco(NamedTuple):
    """Cost of one useful GPU-hour on hardware you own, and its parts."""

    per_useful_gpu_hour: float  # dollars per GPU-hour that trains (after utilization and goodput)
    parts_per_gpu_hour: Mapping[str, float]  # per GPU-hour the hardware exists: depreciation, power, ...
    per_gpu_hour: float  # sum of the parts: per GPU-hour of the hardware's life, used or not
    useful_share: float  # utilization x goodput


def tco(purchase_per_gpu: float, board_power_w: float, node_power_kw: float, gpus_per_node: int = 8,
        life_years: float | None = None, utilization: float = 0.8, goodput: float = 0.9,
        pue: float | None = None, electricity_per_kwh: float | None = None,
        hosting_per_kw_month: float | None = None, staff_per_year: float | None = None,
        gpus_per_admin: float | None = None, network_share: float | None = None) -> Tco:
    """Cost of a useful GPU-hour on owned hardware over its life.

    Per GPU-hour of life: depreciation ``purchase (1 + network share) / (life hours)``, power
    ``node kW / gpus x PUE x price x utilization`` (idle hardware is counted at full power: an
    upper bound), hosting ``node kW / gpus x price per kW-month / 730 h``, staff ``salary /
    (GPUs per admin x 8,766 h)``. Divided by ``utilization x goodput`` it is the cost of a
    GPU-hour that trains. Defaults are plan.json's (sources and assumptions there).
    """
    p = _check.non_negative("purchase_per_gpu", purchase_per_gpu, MAX_PURCHASE_PER_GPU)
    _check.positive("board_power_w", board_power_w, 1e5)
    node_kw = _check.positive("node_power_kw", node_power_kw, 1e4)
    g = _check.positive_int("gpus_per_node", gpus_per_node, MAX_GPUS_PER_NODE)
    life = _check.in_range("life_years", default("life_years") if life_years is None else life_years, 0.1, 50.0)
    u = _check.fraction("utilization", utilization)
    gp = _check.fraction("goodput", goodput)
    pue = _check.at_least("pue", default("pue") if pue is None else pue, 1.0, facility.MAX_PUE)
    kwh = _check.non_negative("electricity_per_kwh",
                              default("electricity_per_kwh") if electricity_per_kwh is None else electricity_per_kwh)
    host = _check.non_negative("hosting_per_kw_month",
                               default("hosting_per_kw_month") if hosting_per_kw_month is None
                               else hosting_per_kw_month)
    staff = _check.non_negative("staff_per_year",
                                default("staff_per_year") if staff_per_year is None else staff_per_year)
    per_admin = _check.positive("gpus_per_admin",
                                default("gpus_per_admin") if gpus_per_admin is None else gpus_per_admin)
    net = _check.non_negative("network_share", default("network_share") if network_share is None else network_share)
    hours_per_year = HOURS_PER_YEAR
    kw_per_gpu = node_kw / g
    parts = {
        "hardware (depreciation)": p * (1.0 + net) / (life * hours_per_year),
        "power (x PUE)": kw_per_gpu * pue * kwh,
        "hosting": kw_per_gpu * host * 12.0 / hours_per_year,
        "staff": staff / (per_admin * hours_per_year),
    }
    total = sum(parts.values())
    share = u * gp
    return _check.fields("tco", Tco(total / share, MappingProxyType(parts), total, share))


def break_even_utilization(purchase_per_gpu: float, rent_per_gpu_hour: float, board_power_w: float,
                           node_power_kw: float, **kwargs: Any) -> float:
    """Utilization above which owning costs less per useful GPU-hour than renting (may exceed 1: never).

    Renting charges only the hours you use, so its cost per useful hour is ``rent / goodput``;
    owning is ``per_gpu_hour / (utilization x goodput)``: they are equal at ``per_gpu_hour / rent``.
    """
    rent = _check.positive("rent_per_gpu_hour", rent_per_gpu_hour)
    own = tco(purchase_per_gpu, board_power_w, node_power_kw, utilization=1.0, goodput=1.0, **kwargs)
    return _check.result("break_even_utilization", own.per_gpu_hour / rent)


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """One way to train the model, with every number and the chapter that computes it."""

    offer: Offer  # the chip and how it is paid for
    n_gpus: int  # accelerators
    layout: PlannedLayout  # tp x pp x dp and the step time
    tokens_per_s: float  # whole job, before failures
    mfu: float  # model FLOPs (6 N + attention) per second over the advertised bf16 peak
    days: float  # wall-clock days, failures and (HPC) queue share included
    gpu_hours: float  # GPUs x hours held
    dollars: float  # money for the run
    needs: Needs  # network, storage, failures
    deadline_days: float | None  # the reader's deadline (None: none given)
    budget_dollars: float | None  # the reader's budget (None: none given)

    @property
    def meets_deadline(self) -> bool:
        return self.deadline_days is None or self.days <= self.deadline_days

    @property
    def meets_budget(self) -> bool:
        return self.budget_dollars is None or self.dollars <= self.budget_dollars

    @property
    def feasible(self) -> bool:
        return self.meets_deadline and self.meets_budget


def _dollars(offer: Offer, n_gpus: int, gpu_hours: float, wall_hours: float,
             tco_kwargs: Mapping[str, Any]) -> float:
    if offer.way == "buy":
        c = chip_info(offer.chip)
        # GPU-hours held already include the failures' losses: price each at the owned rate over utilization.
        return gpu_hours * _owned_rate(offer.purchase_per_gpu, c["board_power_w"], c["node_power_kw"], tco_kwargs)
    if offer.term_years > 0:  # a commitment bills every hour of each whole term, idle hours included
        term_h = offer.term_years * HOURS_PER_YEAR
        return n_gpus * math.ceil(wall_hours / term_h * (1 - 1e-12)) * term_h * offer.price_per_gpu_hour
    return gpu_hours * offer.price_per_gpu_hour


def _owned_rate(purchase: float, board_power_w: float, node_power_kw: float, tco_kwargs: Mapping[str, Any]) -> float:
    """``tco(...).per_useful_gpu_hour`` with full goodput, remembered by its inputs (the search prices every GPU
    count of an owned offer at this one rate)."""
    try:
        key = (purchase, board_power_w, node_power_kw, tuple(sorted(tco_kwargs.items())))
        hash(key)
    except TypeError:  # a value that cannot be a key: computed each time
        return tco(purchase, board_power_w, node_power_kw, goodput=1.0, **tco_kwargs).per_useful_gpu_hour
    return _owned_rate_of(*key)


@lru_cache(maxsize=256)
def _owned_rate_of(purchase: float, board_power_w: float, node_power_kw: float,
                   tco_items: tuple[tuple[str, Any], ...]) -> float:
    return tco(purchase, board_power_w, node_power_kw, goodput=1.0, **dict(tco_items)).per_useful_gpu_hour


class _Run(NamedTuple):
    """What a count of one chip does, whatever the price: the layout, the rate, the failures."""

    layout: PlannedLayout
    tokens_per_s: float
    mfu: float
    held_s: float  # GPUs held: training plus what failures cost
    needs: Needs


def _run(model: memory.ModelConfig, chip: str, n: int, n_tokens: float, seq_len: int, global_batch_tokens: float,
         fs: float, node: float, restart: float | None, layout: PlannedLayout | None = None) -> _Run | None:
    lay = layout if layout is not None else _best_layout(model, chip, n, seq_len, global_batch_tokens, "achievable")
    if lay is None:
        return None
    tps = lay.dp * lay.n_micro * lay.micro_batch * seq_len / lay.step_s
    mfu = tps * flops_per_token(model, seq_len) / (n * spec(chip).peak_flops("bf16"))
    gpn = network.system(chip_info(chip)["system"]).gpus_per_node
    nd = _needs_at(model, n, gpn, tps, n_tokens, fs, node, restart)
    return _Run(lay, tps, mfu, n_tokens / tps / max(nd.goodput, 1e-9), nd)


def _needs_at(model: memory.ModelConfig, n: int, gpn: int, tps: float, n_tokens: float, fs: float, node: float,
              restart: float | None) -> Needs:
    """:func:`needs`, its parts that do not depend on the token rate remembered (the chips of a search share a
    count's switches, checkpoint, failures and goodput): only the dataset read rate, ``tokens_per_s x bytes per
    token`` (:func:`_read_bytes_per_s`), is the rate's."""
    try:
        fixed = _needs_fixed(model, n, gpn, n_tokens, fs, node, restart)
    except TypeError:  # an input that cannot be a key
        return needs(model, n, gpn, tps, n_tokens, fs, node, restart)
    tps = _check.positive("tokens_per_s", tps, 1e15)
    return fixed._replace(read_bytes_per_s=_read_bytes_per_s(model, tps))


@lru_cache(maxsize=4096)
def _needs_fixed(model: memory.ModelConfig, n: int, gpn: int, n_tokens: float, fs: float, node: float,
                 restart: float | None) -> Needs:
    return needs(model, n, gpn, 1.0, n_tokens, fs, node, restart)


@lru_cache(maxsize=4096)
def _run_cached(model: memory.ModelConfig, chip: str, n: int, n_tokens: float, seq_len: int, global_batch_tokens: float,
                fs: float, node: float, restart: float) -> _Run | None:
    """:func:`_run` of the fastest layout, remembered (pure: every input is in the key): a reader's change of
    the deadline, the budget or the offers searches again without computing a count twice."""
    return _run(model, chip, n, n_tokens, seq_len, global_batch_tokens, fs, node, restart)


def _price(run: _Run, model: memory.ModelConfig, offer: Offer, n: int, deadline_days: float, budget_dollars: float,
           avail: float, tco_kwargs: Mapping[str, Any]) -> Plan:
    held_s = run.held_s
    wall_s = held_s / avail if offer.way == "hpc" else held_s  # HPC: charged for the hours run, waiting between jobs
    gpu_hours = n * held_s / SECONDS_PER_HOUR
    dollars = _check.result("dollars", _dollars(offer, n, gpu_hours, wall_s / SECONDS_PER_HOUR, tco_kwargs))
    return Plan(offer, n, run.layout, run.tokens_per_s, run.mfu, _check.result("days", wall_s / SECONDS_PER_DAY),
                gpu_hours, dollars, run.needs, deadline_days if math.isfinite(deadline_days) else None,
                budget_dollars if math.isfinite(budget_dollars) else None)


def _price_cached(run: _Run, model: memory.ModelConfig, offer: Offer, n: int, deadline_days: float,
                  budget_dollars: float, avail: float, tco_kwargs: Mapping[str, Any]) -> Plan:
    """:func:`_price`, remembered by all its inputs (a reader going back to a model, a chip or a limit
    gets the plans already priced); computed each time where an input cannot be a key."""
    try:
        return _price_of(run, model, offer, n, deadline_days, budget_dollars, avail, tuple(sorted(tco_kwargs.items())))
    except TypeError:  # an input that cannot be a key (or a TypeError of _price, raised again here)
        return _price(run, model, offer, n, deadline_days, budget_dollars, avail, tco_kwargs)


@lru_cache(maxsize=8192)
def _price_of(run: _Run, model: memory.ModelConfig, offer: Offer, n: int, deadline_days: float,
              budget_dollars: float, avail: float, tco_items: tuple[tuple[str, Any], ...]) -> Plan:
    return _price(run, model, offer, n, deadline_days, budget_dollars, avail, dict(tco_items))


def _defaults(hpc_availability: float | None, filesystem_write_bytes_per_s: float | None,
              node_storage_bytes_per_s: float | None,
              restart_s: float | None) -> tuple[float, float, float, float | None]:
    avail = _check.fraction("hpc_availability", default("hpc_availability") if hpc_availability is None
                            else hpc_availability)
    fs = _check.positive("filesystem_write_bytes_per_s", default("filesystem_write_gbps") * 1e9
                         if filesystem_write_bytes_per_s is None else filesystem_write_bytes_per_s, 1e15)
    node = _check.positive("node_storage_bytes_per_s", default("storage_gbps_per_node") * 1e9
                           if node_storage_bytes_per_s is None else node_storage_bytes_per_s, 1e15)
    # no restart time given: each plan's comes from the failure model (``needs``)
    restart = None if restart_s is None else _check.non_negative("restart_s", restart_s, 1e7)
    return avail, fs, node, restart


def _limit(name: str, value: Any) -> float:
    """A deadline or budget: positive, or inf for none."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    return _check.positive(name, value)


def _tco_kwargs(tco_kwargs: Any) -> Mapping[str, Any]:
    if tco_kwargs is None:
        return {}
    if not isinstance(tco_kwargs, Mapping):
        raise ValueError(f"tco_kwargs={_check._fmt(tco_kwargs)} is not allowed: give a mapping of mlcalc.plan.tco's "
                         "keyword arguments")
    allowed = ("life_years", "utilization", "pue", "electricity_per_kwh", "hosting_per_kw_month", "staff_per_year",
               "gpus_per_admin", "network_share")
    for k in tco_kwargs:
        _check.choice("tco_kwargs key", k, allowed)
    return tco_kwargs


def evaluate(model: memory.ModelConfig, offer: Offer, n_gpus: int, n_tokens: float, seq_len: int = 4096,
             global_batch_tokens: float = 4 * 2**20, deadline_days: float = math.inf,
             budget_dollars: float = math.inf, hpc_availability: float | None = None,
             filesystem_write_bytes_per_s: float | None = None, node_storage_bytes_per_s: float | None = None,
             restart_s: float | None = None, tco_kwargs: Mapping[str, Any] | None = None,
             layout: PlannedLayout | None = None) -> Plan | None:
    """The plan for ``n_gpus`` (any count up to :data:`MAX_GPUS`) of an offer (None if the model fits
    no layout of that many); ``layout``: this one (e.g. :func:`layout_as_run`) instead of the fastest."""
    _check_model(model)
    check_offer(offer)
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    n_tokens = _check.positive("tokens", n_tokens, MAX_TOKENS)
    s = _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN)
    batch = _check.positive("global_batch_tokens", global_batch_tokens, MAX_BATCH_TOKENS)
    deadline, budget = _limit("deadline_days", deadline_days), _limit("budget_dollars", budget_dollars)
    avail, fs, node, restart = _defaults(hpc_availability, filesystem_write_bytes_per_s, node_storage_bytes_per_s,
                                         restart_s)
    if layout is not None and not isinstance(layout, PlannedLayout):
        raise ValueError(f"layout={_check._fmt(layout)} is not allowed: give a plan.PlannedLayout (plan.layout_as_run)")
    run = _run(model, offer.chip, n, n_tokens, s, batch, fs, node, restart, layout)
    if run is None:
        return None
    return _price(run, model, offer, n, deadline, budget, avail, _tco_kwargs(tco_kwargs))


def leanest_memory_bytes(model: memory.ModelConfig, chip: str, n_gpus: int, seq_len: int) -> float:
    """Per-GPU memory of the leanest layout of ``n_gpus`` (full recomputation, ZeRO-1, micro-batch 1).

    Over the same bounded set of tp and pp as :func:`best_layout`; layouts whose tp x pp does not
    divide ``n_gpus`` are skipped. ``inf`` if none divides it.
    """
    _check_model(model)
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    s = _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN)
    sys_key = chip_info(chip)["system"]
    gpn = network.system(sys_key).gpus_per_node
    best = math.inf
    for tp in network.parallel_degrees_inside(sys_key):
        if tp > gpn or model.n_heads % tp:
            continue
        for pp in _pipeline_sizes(model):
            if n % (tp * pp):
                continue
            best = min(best, _layout_memory(model, chip, tp, pp, n // (tp * pp), s, "full").total_bytes)
    return best


# --------------------------------------------------------------------------- the search


def candidate_counts(max_gpus: int, gpus_per_node: int = 8) -> tuple[int, ...]:
    """The GPU counts the search tries, up to ``max_gpus``: whole nodes whose node count has at most
    :data:`SIGNIFICANT_BITS` significant binary digits (1, 2, ... 8, then 10, 12, 14, 16, 20, 24, 28,
    32, 40 ... nodes: 4 per doubling, at most 19% apart), and ``max_gpus`` rounded down to whole
    nodes. Below one node: 1, 2, 4 ... and ``max_gpus``. At most :data:`MAX_COUNTS` counts.
    """
    cap = _check.positive_int("max_gpus", max_gpus, MAX_GPUS)
    g = _check.positive_int("gpus_per_node", gpus_per_node, MAX_GPUS_PER_NODE)
    return _counts(cap, g)


@lru_cache(maxsize=256)
def _counts(cap: int, g: int) -> tuple[int, ...]:
    if cap < g:
        return tuple(sorted({2**k for k in range(cap.bit_length()) if 2**k <= cap} | {cap}))
    out = set()
    for nodes in range(1, cap // g + 1):
        if nodes.bit_length() <= SIGNIFICANT_BITS or nodes % (1 << (nodes.bit_length() - SIGNIFICANT_BITS)) == 0:
            out.add(nodes * g)
    out.add(cap // g * g)
    return tuple(sorted(out))


#: The most counts :func:`candidate_counts` gives for any cap up to :data:`MAX_GPUS` (8 nodes of 8,
#: 4 per doubling above, and the cap itself).
MAX_COUNTS = len(candidate_counts(MAX_GPUS)) + 1


class Search(NamedTuple):
    """The planner's answer: the cheapest and the fastest plan that meet both limits, or why there is none."""

    cheapest: Plan | None  # fewest dollars among plans that meet the deadline and the budget (ties: fastest)
    fastest: Plan | None  # fewest days among plans that meet the deadline and the budget (ties: cheapest)
    plans: tuple[Plan, ...]  # the cheapest feasible plan of each offer that has one, cheapest first
    closest: tuple[Plan, ...]  # when none is feasible: per offer its cheapest plan on time, else its fastest
    problems: tuple[str, ...]  # which constraint breaks and by how much (empty when plans exist)
    counts_tried: int  # (chip, count) pairs whose layout was searched
    counts: tuple[int, ...]  # the candidate counts (candidate_counts(max_gpus))
    price_range: tuple[Plan, ...]  # the cheapest plan's chip and count under every offer searched, cheapest first


def _rank_cost(p: Plan) -> tuple[float, float, int, str]:
    return (p.dollars, p.days, p.n_gpus, p.offer.name)


def _rank_time(p: Plan) -> tuple[float, float, int, str]:
    return (p.days, p.dollars, p.n_gpus, p.offer.name)


def search(model: memory.ModelConfig, offer_names: Iterable[str], n_tokens: float, deadline_days: float,
           budget_dollars: float, seq_len: int = 4096, global_batch_tokens: float = 4 * 2**20,
           max_gpus: int = 16384, counts: Iterable[int] | None = None, **kwargs: Any) -> Search:
    """The cheapest and the fastest plan that meet the deadline and the budget.

    Every offer is tried at every count of :func:`candidate_counts` (or of ``counts``, each at most
    :data:`MAX_GPUS`), each count with its fastest layout (:func:`best_layout`). A count is skipped
    only when even its floor (every FLOP at the step's rate, no bubble, communication or failure)
    misses the deadline; when no plan is feasible, those are tried too. ``problems`` then names the
    constraint that breaks (memory, deadline, budget) and by how much.
    """
    _check_model(model)
    n_tokens = _check.positive("tokens", n_tokens, MAX_TOKENS)
    deadline = _check.positive("deadline (days)", deadline_days)
    budget = _check.positive("budget (dollars)", budget_dollars)
    s = _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN)
    batch = _check.positive("global_batch_tokens", global_batch_tokens, MAX_BATCH_TOKENS)
    cap = _check.positive_int("max GPUs", max_gpus, MAX_GPUS)
    if isinstance(offer_names, str):
        offer_names = [offer_names]
    names = list(offer_names)[:1000]
    if not names:
        raise ValueError("offers=[] is not allowed: choose at least one offer")
    for name in names:
        _check.choice("offer", name, offers())
    if counts is None:
        cands = candidate_counts(cap)
    else:
        cands = tuple(sorted({_check.positive_int("count", c, MAX_GPUS) for c in list(counts)[:MAX_COUNTS + 1]}))
        if len(cands) > MAX_COUNTS or not cands:
            raise ValueError(f"counts is not allowed: give 1 to {MAX_COUNTS} GPU counts")
    avail, fs, node, restart = _defaults(kwargs.pop("hpc_availability", None),
                                         kwargs.pop("filesystem_write_bytes_per_s", None),
                                         kwargs.pop("node_storage_bytes_per_s", None), kwargs.pop("restart_s", None))
    tco_kw = _tco_kwargs(kwargs.pop("tco_kwargs", None))
    if kwargs:
        raise ValueError(f"{sorted(kwargs)[0]} is not allowed: search takes hpc_availability, "
                         "filesystem_write_bytes_per_s, node_storage_bytes_per_s, restart_s, tco_kwargs")
    by_chip: dict[str, list[Offer]] = {}
    for name in dict.fromkeys(names):
        by_chip.setdefault(offers()[name].chip, []).append(offers()[name])
    f_token = _flops_per_token(model, s)
    plans: list[Plan] = []
    tried = 0
    fits: dict[str, bool] = {}

    def visit(chip: str, n: int) -> None:
        nonlocal tried
        tried += 1
        run = _run_cached(model, chip, n, n_tokens, s, batch, fs, node, restart)
        if run is None:
            return
        fits[chip] = True
        plans.extend(_price_cached(run, model, o, n, deadline, budget, avail, tco_kw) for o in by_chip[chip])

    skipped: list[tuple[str, int]] = []
    for chip, chip_offers in by_chip.items():
        fits.setdefault(chip, False)
        share = max(avail if o.way == "hpc" else 1.0 for o in chip_offers)  # the offer whose days are fewest
        for n in cands:
            # The floor: every FLOP at the step's own rate (step_time_floor), no bubble, communication,
            # failure or queue; days can only be longer.
            floor_days = n_tokens * f_token / (n * _step_rate(chip, "achievable")) / share / SECONDS_PER_DAY
            if floor_days > deadline:
                skipped.append((chip, n))
            else:
                visit(chip, n)
    feasible = [p for p in plans if p.feasible]
    if not feasible:
        for chip, n in skipped:
            visit(chip, n)
    cheapest = min(feasible, key=_rank_cost) if feasible else None
    fastest = min(feasible, key=_rank_time) if feasible else None
    per_offer: dict[str, Plan] = {}
    for p in sorted(feasible, key=_rank_cost):
        per_offer.setdefault(p.offer.name, p)
    closest_by: dict[str, Plan] = {}
    if not feasible:  # per offer: its cheapest plan on time if it has one, else its fastest
        for p in sorted((p for p in plans if p.meets_deadline), key=_rank_cost):
            closest_by.setdefault(p.offer.name, p)
        for p in sorted(plans, key=_rank_time):
            closest_by.setdefault(p.offer.name, p)
    spread: tuple[Plan, ...] = ()
    if cheapest is not None:
        spread = tuple(sorted((p for p in plans if p.offer.chip == cheapest.offer.chip
                               and p.n_gpus == cheapest.n_gpus), key=_rank_cost))
    problems = [] if feasible else _problems(model, plans, by_chip, fits, cands, cap, deadline, deadline_days, s)
    return Search(cheapest, fastest, tuple(per_offer.values()), tuple(closest_by.values()), tuple(problems), tried,
                  cands, spread)


def _problems(model: memory.ModelConfig, plans: list[Plan], by_chip: Mapping[str, list[Offer]],
              fits: Mapping[str, bool], cands: tuple[int, ...], cap: int, deadline: float, deadline_days: Any,
              s: int) -> list[str]:
    """Why no plan meets both limits: memory, the deadline, the budget, each by how much."""
    out = []
    for chip, ok in fits.items():
        if ok:
            continue
        need = leanest_memory_bytes(model, chip, cands[-1], s)
        have = spec(chip).memory_bytes
        out.append(f"memory: {model.name} fits no layout of up to {cands[-1]:,} x {chip}: the leanest "
                   f"(tp <= 8, ZeRO-1, full recomputation) needs {need / 1e9:,.0f} GB per GPU, "
                   f"{(need - have) / 1e9:,.0f} GB ({(need - have) / have:.0%}) over its {have / 1e9:,.0f} GB")
    if not plans:
        return out
    fast = min(plans, key=_rank_time)
    if not fast.meets_deadline:
        over = fast.days - deadline
        most = max(p.n_gpus for p in plans if p.offer.chip == fast.offer.chip)
        why = (f"the most GPUs tried, {cap:,}; more might help: raise the limit" if fast.n_gpus >= cap else
               f"more GPUs, up to {most:,}, are slower: smaller shards, longer bubbles, more failures")
        out.append(f"deadline: the fastest plan, {fast.n_gpus:,} x {fast.offer.name}, takes {fixed(fast.days)} days: "
                   f"{fixed(over)} days ({over / deadline:.0%}) over the {deadline:,.1f}-day deadline ({why})")
        step = min(p.layout.step_s for p in plans)
        if deadline * SECONDS_PER_DAY < step:
            out.insert(0, f"deadline: {deadline_days:g} days is shorter than one training step ({step:,.1f} s)")
    on_time = [p for p in plans if p.meets_deadline]
    cheap = min(on_time or plans, key=_rank_cost)
    if cheap.budget_dollars is not None and not cheap.meets_budget:
        over = cheap.dollars - cheap.budget_dollars
        which = "that meets the deadline" if cheap.meets_deadline else "of those that miss the deadline"
        out.append(f"budget: the cheapest plan {which}, {cheap.n_gpus:,} x {cheap.offer.name}, costs "
                   f"${cheap.dollars:,.0f}: ${over:,.0f} ({over / cheap.budget_dollars:.0%}) over the "
                   f"${cheap.budget_dollars:,.0f} budget")
    return out


def explain(p: Plan, model: memory.ModelConfig, n_tokens: float) -> str:
    """One sentence a reader can check with a calculator: days from tokens, rate and goodput; dollars from
    GPUs, hours and the price."""
    lay = p.layout
    days = (f"{n_tokens / 1e9:,.0f}B tokens / {p.tokens_per_s:,.0f} tokens/s / {p.needs.goodput:.1%} goodput"
            f" = {fixed(p.days)} days")
    if p.offer.way == "hpc":
        held = p.gpu_hours / p.n_gpus / 24
        days = (f"{n_tokens / 1e9:,.0f}B tokens / {p.tokens_per_s:,.0f} tokens/s / {p.needs.goodput:.1%} goodput "
                f"= {fixed(held)} days of jobs, / {held / p.days:.0%} of the time running = {fixed(p.days)} days")
    if p.offer.way == "buy":
        cost = (f"{p.gpu_hours:,.0f} GPU-hours at ${p.dollars / p.gpu_hours:,.2f} (owning: depreciation, power, "
                f"hosting and staff per hour used, mlcalc.plan.tco) = ${p.dollars:,.0f}")
    elif p.offer.term_years > 0:
        terms = round(p.dollars / (p.n_gpus * p.offer.term_years * HOURS_PER_YEAR * p.offer.price_per_gpu_hour))
        cost = (f"{p.n_gpus:,} GPUs x {terms} x {p.offer.term_years:g}-year term x {HOURS_PER_YEAR:,.0f} h x "
                f"${p.offer.price_per_gpu_hour:,.3f} = ${p.dollars:,.0f} (every hour of the term is billed)")
    else:
        cost = (f"{p.n_gpus:,} GPUs x {p.gpu_hours / p.n_gpus:,.0f} h x ${p.offer.price_per_gpu_hour:,.3f} "
                f"= ${p.dollars:,.0f}")
    sched = f", interleaved 1F1B with {lay.virtual_stages} chunks per GPU" if lay.virtual_stages > 1 else ""
    return (f"{p.n_gpus:,} x {p.offer.chip} as tp={lay.tp} x pp={lay.pp} x dp={lay.dp} ({lay.recompute} "
            f"recomputation{sched}): {explain_step(p)} {days}; {cost}. " + explain_goodput(p.needs))


def explain_step(p: Plan) -> str:
    """Where a plan's rate comes from: the step's tokens, its time part by part (the engine's), the MFU and the
    memory fit, each a number a reader can redo."""
    lay = p.layout
    seqs = lay.dp * lay.n_micro * lay.micro_batch
    reserve = steptime.MEMORY_RESERVE_FRACTION
    return (f"a step of {seqs:,} sequences ({lay.dp:,} replicas x {lay.n_micro:,} micro-batches of "
            f"{lay.micro_batch:,}), {p.tokens_per_s * lay.step_s:,.0f} tokens, takes {duration(lay.step_s)} = "
            f"{duration(lay.compute_s)} of kernels + {_part(lay.bubble_s, 'pipeline bubble', 'no pipeline bubble')} + "
            f"{_part(lay.comm_s, 'communication not hidden', 'no communication left unhidden')} (mlcalc.steptime.predict_step), so "
            f"{p.tokens_per_s:,.0f} tokens/s and "
            f"{p.mfu:.1%} MFU (6 N + 12 L H Q T FLOP per token over the bf16 peak); it needs "
            f"{lay.memory_bytes / 1e9:,.1f} GB per GPU of the {spec(p.offer.chip).capacity_text()} it has, "
            f"{reserve:.0%} of it held back for the CUDA context and buffers (mlcalc.memory.training_memory).")


def _part(seconds: float, what: str, none: str) -> str:
    """One part of a step's time: "120 ms of pipeline bubble", or ``none`` ("no pipeline bubble") when it is 0."""
    return f"{duration(seconds)} of {what}" if seconds > 0 else none


def explain_goodput(nd: Needs) -> str:
    """Where a plan's goodput comes from: the job's MTBF, its checkpoints and one restart, part by part."""
    r = nd.restart
    parts = ("" if r is None else
             f" = detect {sig(r.detect_s / 60, 2)} + replace {sig(r.replace_s / 60, 2)} + reschedule "
             f"{sig(r.reschedule_s / 60, 2)} + load the checkpoint {sig(r.load_s / 60, 2)} + warm up "
             f"{sig(r.warmup_s / 60, 2)}"
             " (mlcalc.failures.restart_time)")
    return (f"Goodput {nd.goodput:.1%}: an interruption every {fixed(nd.mtbf_s / SECONDS_PER_HOUR)} h (Llama 3's "
            f"rates by cause for {nd.nodes:,} nodes), a {sig(nd.checkpoint_bytes / 1e12, 2)} TB checkpoint written in "
            f"{nd.checkpoint_write_s:,.0f} s every {nd.interval_s / 60:,.0f} min (Daly), and a restart of "
            f"{nd.restart_s / 60:,.1f} min{parts}.")


# --------------------------------------------------------------------------- published runs


class RunCheck(NamedTuple):
    """The planner against one published training run."""

    name: str  # run name
    gpus: int  # GPUs the run used
    chip: str  # catalogue key
    predicted_gpu_hours: float  # the planner's GPU-hours (without interruptions where the published figure has none)
    published_gpu_hours: float | None  # as published (None if not)
    predicted_days: float  # the planner's wall-clock days (likewise)
    published_days: float | None  # as published (None if not)
    error: float  # predicted / published - 1 on GPU-hours (on days if no GPU-hours are published)
    layout: PlannedLayout  # the layout the planner picked
    mfu: float  # the planner's MFU
    goodput: float  # the planner's goodput after failures
    what: str  # what the published figure counts
    source: str  # where it is published
    counts_failures: bool = True  # the published figure includes interruptions (so the prediction does too)


def run_model(entry: Mapping[str, Any]) -> memory.ModelConfig:
    """The model of a published run: a preset, or a GPT-style config from the entry's shape."""
    if entry.get("model"):
        return memory.model_preset(entry["model"])
    h, heads = int(entry["hidden"]), int(entry["n_heads"])
    return memory.ModelConfig(name=entry.get("name", "model"), n_layers=int(entry["n_layers"]), hidden=h,
                              n_heads=heads, n_kv_heads=heads, head_dim=h // heads, ffn_hidden=4 * h,
                              vocab=int(entry["vocab"]), gated_mlp=False, tied_embeddings=True, biases=True,
                              norm="layernorm", activation=entry.get("activation", "gelu"),
                              learned_positions=int(entry.get("learned_positions", 0)),
                              published_params=float(entry["n_params"]))


def published_runs() -> Mapping[str, Mapping[str, Any]]:
    """The published training runs of plan.json, by name."""
    return MappingProxyType({k: v for k, v in data()["published_runs"].items() if k != "fields"})


def layout_as_run(model: memory.ModelConfig, chip: str, n_gpus: int, seq_len: int, global_batch_tokens: float,
                  layout: Mapping[str, Any]) -> PlannedLayout:
    """One given layout (a published run's: tp, pp, recompute and optionally micro_batch, zero, schedule,
    virtual_stages, sequence_parallel, scatter_gather, balanced_stages, deepspeed_pipeline, unfused_attention) with the engine's
    step and memory, as a planner :class:`PlannedLayout`."""
    _check_model(model)
    _check.choice("chip", chip, chips())
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    s = _check.positive_int("seq_len", seq_len, MAX_SEQ_LEN)
    if not isinstance(layout, Mapping):
        raise ValueError(f"layout={_check._fmt(layout)} is not allowed: give a mapping of tp, pp, recompute, ...")
    tp = _check.positive_int("tp", layout.get("tp", 1), n)
    pp = _check.positive_int("pp", layout.get("pp", 1), n)
    if n % (tp * pp):
        raise ValueError(f"tp x pp={tp * pp} is not allowed: it must divide n_gpus={n}")
    dp = n // (tp * pp)
    mb = _check.positive_int("micro_batch", layout.get("micro_batch", 1), 10**6)
    m = max(1, round(_batch_seqs(_check.positive("global_batch_tokens", global_batch_tokens, MAX_BATCH_TOKENS), s)
                     / (dp * mb)))
    lay = steptime.Layout(tp=tp, pp=pp, dp=dp, zero=layout.get("zero", 1 if dp > 1 else 0),
                          sequence_parallel=layout.get("sequence_parallel", False),
                          schedule=layout.get("schedule", "1f1b"), virtual_stages=layout.get("virtual_stages", 1),
                          recompute=layout.get("recompute", "selective"), micro_batch=mb, grad_accum=m,
                          scatter_gather=layout.get("scatter_gather", False),
                          balanced_stages=layout.get("balanced_stages", False),
                          deepspeed_pipeline=layout.get("deepspeed_pipeline", False),
                          unfused_attention=layout.get("unfused_attention", False))
    p = _predict_all(model, chip, lay, s)
    return PlannedLayout(tp, pp, dp, mb, m, lay.recompute, p.peak_bytes_per_gpu, p.step_s - p.bubble_s - p.comm_exposed_s,
                         p.bubble_s, p.comm_exposed_s, p.step_s, lay.virtual_stages)


def check_run(name: str) -> RunCheck:
    """Predict a published run from its model, tokens, GPU count and chip, and its layout where the source
    states one (else the planner's fastest layout)."""
    _check.choice("run", name, published_runs())
    e = dict(published_runs()[name], name=name)
    model = run_model(e)
    offer = Offer(name, e["chip"], "rent", 0.0, 0.0, e["source"])
    fs = e.get("filesystem_write_gbps")
    lay = None
    if e.get("layout"):  # the layout the run used, as its source states it
        lay = layout_as_run(model, e["chip"], int(e["gpus"]), int(e["seq_len"]), float(e["global_batch_tokens"]),
                            e["layout"])
    p = evaluate(model, offer, int(e["gpus"]), float(e["n_tokens"]), int(e["seq_len"]), float(e["global_batch_tokens"]),
                 filesystem_write_bytes_per_s=None if fs is None else float(fs) * 1e9, layout=lay)
    if p is None:
        raise ValueError(f"run={name!r}: the model fits no layout of {e['gpus']} x {e['chip']}")
    pub_h = e.get("gpu_hours")
    if pub_h is None and e.get("published_tflops_per_gpu"):
        pub_h = compute.training_flops(float(e["n_params"]), float(e["n_tokens"])) \
            / (float(e["published_tflops_per_gpu"]) * 1e12) / SECONDS_PER_HOUR
    pub_d = e.get("days")
    # Like with like: where the source's figure leaves interruptions out ("counts_failures": false, e.g. a time
    # at a stated rate), so does the prediction (held time x goodput); else the failure model's losses stay in.
    counts = bool(e.get("counts_failures", True))
    keep = 1.0 if counts else p.needs.goodput
    gpu_h, days = p.gpu_hours * keep, p.days * keep
    if pub_h is not None:
        err = gpu_h / float(pub_h) - 1.0
    elif pub_d is not None:
        err = days / float(pub_d) - 1.0
    else:
        raise ValueError(f"run={name!r}: its record gives no gpu_hours, published_tflops_per_gpu or days to check")
    return RunCheck(name, int(e["gpus"]), e["chip"], gpu_h, None if pub_h is None else float(pub_h), days,
                    None if pub_d is None else float(pub_d), err, p.layout, p.mfu, p.needs.goodput, e["what"],
                    e["source"], counts)


# --------------------------------------------------------------------------- keeping a plan


def _item(value: float, unit: str, chapter: str, how: str) -> dict[str, Any]:
    return {"value": float(f"{value:.6g}"), "unit": unit, "chapter": CHAPTERS[chapter], "how": how}


#: The system each planned chip is housed in, for its power (mlcalc.facility, data/facility.json: the H200
#: ships in the DGX H100's chassis, the DGX H200).
FACILITY_SYSTEM: Mapping[str, str] = MappingProxyType({
    "A100-80GB": "DGX A100", "H100-SXM": "DGX H100", "H200-SXM": "DGX H100", "B200": "DGX B200",
    "GB200": "GB200 NVL72"})
#: The facility chapter's named figures a plan's power and energy use (each dated and sourced in facility.json).
FACILITY_PUE = "industry average 2023 (Uptime Institute)"
FACILITY_PRICE = "US industrial, SemiAnalysis 2024"
FACILITY_INTENSITY = "Microsoft datacenter (GPT-3, Patterson et al.)"


def plan_facility(p: Plan) -> facility.TrainingFacility | None:
    """Power, racks, energy, electricity and emissions of a plan: its GPUs' systems at their maximum power
    for the plan's wall-clock days (an upper bound), at :data:`FACILITY_PUE`, :data:`FACILITY_PRICE` and
    :data:`FACILITY_INTENSITY`; None for a chip the facility data houses in no system."""
    system = FACILITY_SYSTEM.get(p.offer.chip)
    if system is None:
        return None
    return facility.training_facility(p.n_gpus, p.days, system, facility.pue_presets()[FACILITY_PUE],
                                      facility.price_presets()[FACILITY_PRICE],
                                      facility.intensity_presets()[FACILITY_INTENSITY])


def facility_line(p: Plan, label: str = "") -> str:
    """One line: the plan's power at the meter, racks, energy, electricity and emissions (or why not);
    ``label`` follows "Power" ("Power of the cheapest plan: ...")."""
    f = plan_facility(p)
    if f is None:
        return f"Power{label}: no system in the facility data houses {p.offer.chip}."
    c, e = f.power, f.energy
    return (f"Power{label}: {c.facility_kw / 1000:,.2f} MW at the meter ({c.it_kw / 1000:,.2f} MW IT x PUE "
            f"{facility.pue_presets()[FACILITY_PUE]:g}), {c.racks:,} racks of {c.rack_kw:,.1f} kW ({c.cooling}); "
            f"for {fixed(p.days)} days: {e.facility_kwh / 1000:,.0f} MWh, ${e.cost_usd:,.0f} of electricity at "
            f"${facility.price_presets()[FACILITY_PRICE]:g}/kWh, {e.emissions_t:,.0f} t CO2e at "
            f"{facility.intensity_presets()[FACILITY_INTENSITY]:g} kg/kWh (the facility chapter).")


def plan_numbers(p: Plan) -> dict[str, dict[str, Any]]:
    """Every number of a plan: value, unit, how it is computed and the chapter that computes it."""
    lay, nd = p.layout, p.needs
    return {
        "gpus": _item(p.n_gpus, "GPUs", "layout", "the search's count (mlcalc.plan.candidate_counts)"),
        "memory per GPU": _item(lay.memory_bytes / 1e9, "GB", "memory", "mlcalc.memory.training_memory"),
        "step time": _item(lay.step_s, "s", "step", "compute + pipeline bubble + exposed communication"),
        "exposed communication": _item(lay.comm_s, "s", "layout", "mlcalc.parallel.layout_budget"),
        "pipeline bubble": _item(lay.bubble_s, "s", "layout", "mlcalc.parallel.bubble_fraction"),
        "MFU": _item(p.mfu, "fraction", "flops", "(6 N + 6 L s h) x tokens/s / (GPUs x bf16 peak)"),
        "tokens per second": _item(p.tokens_per_s, "tokens/s", "step", "global batch / step time"),
        "days": _item(p.days, "days", "tokens", "tokens / tokens per second / goodput"),
        "GPU-hours": _item(p.gpu_hours, "GPU-hours", "tokens", "GPUs x hours held"),
        "dollars": _item(p.dollars, "USD", "cost", f"{p.offer.way}: {p.offer.source}"),
        "switches": _item(nd.switches, "switches", "network", f"fat tree of {SWITCH_RADIX}-port switches"),
        "cables": _item(nd.cables, "links", "network", "mlcalc.network.fat_tree_counts"),
        "dataset read rate": _item(nd.read_bytes_per_s / 1e6, "MB/s", "read", "tokens/s x bytes per token id"),
        "checkpoint size": _item(nd.checkpoint_bytes / 1e12, "TB", "checkpoint", "14 bytes per parameter"),
        "checkpoint write": _item(nd.checkpoint_write_s, "s", "checkpoint", "mlcalc.storage.checkpoint_write_time"),
        "checkpoint write bandwidth": _item(nd.write_bytes_per_s / 1e9, "GB/s", "checkpoint",
                                            "min(filesystem, nodes x storage link)"),
        "job MTBF": _item(nd.mtbf_s / SECONDS_PER_HOUR, "h", "checkpoint",
                          "Llama 3's interruptions by cause, scaled by GPUs and nodes (mlcalc.failures)"),
        "checkpoint interval": _item(nd.interval_s / 60.0, "min", "checkpoint", "Daly 2006"),
        "restart": _item(nd.restart_s / 60.0, "min", "failures",
                         "detect + replace + reschedule + load the checkpoint + warm up (mlcalc.failures.restart_time)"
                         if nd.restart is not None else "as given"),
        "goodput": _item(nd.goodput, "fraction", "checkpoint", "mlcalc.storage.goodput"),
        "storage to buy": _item(nd.capacity_bytes / 1e12, "TB", "capacity",
                                f"dataset + {CHECKPOINTS_KEPT} checkpoints / 0.8"),
        **_facility_numbers(p),
    }


def _facility_numbers(p: Plan) -> dict[str, dict[str, Any]]:
    f = plan_facility(p)
    if f is None:
        return {}
    how = f"{FACILITY_SYSTEM[p.offer.chip]} systems at their maximum power"
    return {
        "power at the meter": _item(f.power.facility_kw / 1000, "MW", "facility", f"{how}, x PUE"),
        "racks": _item(f.power.racks, "racks", "facility", f"{f.power.rack_kw:,.1f} kW each, {f.power.cooling}"),
        "energy": _item(f.energy.facility_kwh / 1000, "MWh", "facility", "power x wall-clock hours"),
        "electricity": _item(f.energy.cost_usd, "USD", "facility", f"{FACILITY_PRICE}"),
        "emissions": _item(f.energy.emissions_t, "t CO2e", "facility", f"{FACILITY_INTENSITY}"),
    }


def plan_record(p: Plan, model: memory.ModelConfig, n_tokens: float) -> dict[str, Any]:
    """A plan as plain data: the inputs, the layout and every number with its unit and chapter."""
    lay = p.layout
    return {
        "model": model.name, "parameters": model.n_params(), "tokens": n_tokens,
        "offer": p.offer.name, "chip": p.offer.chip, "way": p.offer.way, "price_source": p.offer.source,
        "price_date": p.offer.date, "explanation": explain(p, model, n_tokens),
        "deadline_days": p.deadline_days,
        "budget_dollars": p.budget_dollars,
        "layout": {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "zero": 1, "micro_batch": lay.micro_batch,
                   "recompute": lay.recompute, "chapter": CHAPTERS["layout"]},
        "numbers": plan_numbers(p),
    }


#: The page whose planner a plan's link reopens (its address plus the plan's query).
PLAN_PAGE = "notebooks/plan/training-plan"


def plan_json(p: Plan, model: memory.ModelConfig, n_tokens: float, query: str = "") -> str:
    """The plan as JSON (sorted keys, finite numbers only); ``query``: the planner's inputs as a page
    query (mlcalc.live.query_from_values), kept under ``reopen`` when given."""
    rec = plan_record(p, model, n_tokens)
    if query:
        rec["reopen"] = {"page": PLAN_PAGE, "query": query}
    return json.dumps(rec, indent=1, sort_keys=True, allow_nan=False)


def format_value(value: float, unit: str = "") -> str:
    """A number as a reader reads it: dollars as $1,234,567; others with thousands separators and four
    significant digits below 1,000; never an exponent above 1e-3, never a signed zero."""
    x = _check.number("value", value) + 0.0
    if unit in ("USD", "$"):
        return f"{'-' if x < 0 else ''}${abs(x):,.0f}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if x == 0:
        return "0"
    return f"{x:,.4g}" if abs(x) >= 1e-3 else f"{x:.1e}"


def plan_markdown(p: Plan, model: memory.ModelConfig, n_tokens: float, query: str = "") -> str:
    """The plan as a Markdown table: number, unit, how, chapter; ``query`` as in :func:`plan_json`."""
    rec = plan_record(p, model, n_tokens)
    lay = rec["layout"]
    reopen = [f"Reopen it on the book's site: {PLAN_PAGE}.html followed by `{query}`.", ""] if query else []
    lines = [f"# Plan: {rec['model']} on {rec['offer']}", "",
             f"{rec['tokens'] / 1e9:,.0f}B tokens; layout tp={lay['tp']} x pp={lay['pp']} x dp={lay['dp']}, ZeRO-1, "
             f"{lay['recompute']} recomputation. Price: {rec['price_source']} ({rec['price_date'] or 'no date'}).",
             "", rec["explanation"], "", *reopen,
             "| number | value | unit | how | chapter |", "| --- | --- | --- | --- | --- |"]
    for k, v in rec["numbers"].items():
        lines.append(f"| {k} | {format_value(v['value'], v['unit'])} | {v['unit']} | {v['how']} | {v['chapter']} |")
    return "\n".join(lines) + "\n"


def compare(a: Plan, b: Plan) -> list[tuple[str, float, float, str]]:
    """Two plans side by side: (number, plan a, plan b, unit) for every number of a plan."""
    ra, rb = plan_numbers(a), plan_numbers(b)
    return [(k, ra[k]["value"], rb[k]["value"], ra[k]["unit"]) for k in ra if k in rb]


__all__ = [
    "CHAPTERS", "CHINCHILLA_TOKENS_PER_PARAM", "GPU_COUNTS", "PlannedLayout", "MAX_COUNTS", "MAX_GPUS", "Needs", "Offer",
    "PLAN_PAGE", "Plan", "RunCheck", "ENGINE", "Search", "StepTime", "Tco", "WAYS", "best_layout",
    "break_even_utilization", "candidate_counts", "check_offer", "check_run", "chinchilla_tokens", "chip_info",
    "chips", "compare", "data", "default", "device_mtbf_s", "evaluate", "explain", "flops_per_token", "layout_as_run", "engine_layout",
    "explain_step", "layout_candidates", "layout_memory", "leanest_memory_bytes", "needs", "offered_chips", "offers", "plan_json",
    "plan_markdown", "plan_numbers", "plan_record", "published_runs", "run_model", "search", "step_time",
    "step_time_floor", "tco",
]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
