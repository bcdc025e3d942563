"""Plan a whole training run: from a model, tokens, a deadline and a budget to hardware, layout, days and dollars.

Every number comes from the book's other modules; this one only joins them:

- memory decides the layout (``mlcalc.memory.training_memory``: a tp x pp x dp layout with ZeRO-1
  and selective or full recomputation that fits the device);
- the layout decides the communication (on the node's fabric, ``mlcalc.network``) and the pipeline
  bubble (``mlcalc.parallel.bubble_fraction``), both inside the step-time engine;
- the one step-time engine (``mlcalc.steptime.predict_step``) gives each layout's step time and memory:
  the products at their sharded shapes, attention, element-wise work, the optimizer, the collectives
  on the node's links and the pipeline bubble; hence the MFU and the tokens per second;
- failures at the count's rate decide the checkpoint interval (Young/Daly, ``mlcalc.storage``) and
  the goodput; these give the days, the GPU-hours and the dollars;
- ``mlcalc.network.fat_tree_counts`` gives the switches and cables, ``mlcalc.storage`` the read rate,
  the checkpoint size and write time and the capacity.

The search is bounded (:data:`MAX_GPUS`, :data:`GPU_COUNTS`): at most ``len(GPU_COUNTS)`` counts per
offer and a fixed set of layouts per count, so nothing grows with a number the reader types.
Base units: FLOP, bytes, seconds, dollars.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple

from mlcalc import _check
from mlcalc import compute, memory, network, parallel, steptime, storage
from mlcalc.accelerators import spec

SECONDS_PER_DAY = 86400.0
SECONDS_PER_HOUR = 3600.0

# Hoffmann et al. 2022 ("Chinchilla"): compute-optimal training uses about 20 tokens per parameter.
CHINCHILLA_TOKENS_PER_PARAM = 20.0

# The largest cluster the planner considers, and the counts it tries: 8 x 2^k GPUs (whole nodes of 8).
MAX_GPUS = 65536
GPU_COUNTS: tuple[int, ...] = tuple(8 * 2**k for k in range(14))  # 8 ... 65,536
TENSOR_PARALLEL = (1, 2, 4, 8)
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


class Offer(NamedTuple):
    """A way to get accelerators: which chip, how (rent, HPC allocation, buy) and at what price."""

    name: str  # label, e.g. "H100 rent (AWS Capacity Block)"
    chip: str  # catalogue key, e.g. "H100-SXM"
    way: str  # "rent", "hpc" or "buy"
    price_per_gpu_hour: float  # rent and hpc: dollars per GPU-hour (buy: 0, see TCO)
    purchase_per_gpu: float  # buy: dollars per GPU, its share of the node (else 0)
    source: str  # where the price comes from


@lru_cache(maxsize=None)
def offers() -> Mapping[str, Offer]:
    """Every priced offer of plan.json, by name, in file order."""
    out = {}
    for name, o in data()["offers"].items():
        if name == "fields":
            continue
        out[name] = Offer(name, o["chip"], o["way"], float(o.get("price_per_gpu_hour", 0.0)),
                          float(o.get("purchase_per_gpu", 0.0)), o["source"])
    return MappingProxyType(out)


def chip_info(chip: str) -> Mapping[str, Any]:
    """System, board power and node power of a chip the planner knows (plan.json ``chips``)."""
    chips = {k: v for k, v in data()["chips"].items() if k != "fields"}
    _check.choice("chip", chip, chips)
    return chips[chip]


def chinchilla_tokens(n_params: float) -> float:
    """Compute-optimal training tokens: 20 per parameter (Hoffmann et al. 2022)."""
    return CHINCHILLA_TOKENS_PER_PARAM * _check.positive("n_params", n_params)


# --------------------------------------------------------------------------- step-time model


#: The framework the planner assumes a large run trains with: Megatron-LM-style (bf16 weights, fused
#: kernels, host hidden), as :func:`mlcalc.steptime.predict_step` models it.
ENGINE = "megatron"

RECOMPUTE_FACTOR = {"selective": 1.0, "full": 8.0 / 6.0}  # extra forward pass: 6N -> 8N per token


def flops_per_token(model: memory.ModelConfig, seq_len: int) -> float:
    """Model FLOP per token in the book's one convention, PaLM's ``6 N + 12 L H Q T``
    (:func:`mlcalc.compute.palm_flops_per_token`; Chowdhery et al. 2022, Appendix B)."""
    return compute.palm_flops_per_token(model, _check.positive_int("seq_len", seq_len))


class Layout(NamedTuple):
    """A parallel layout and what one training step costs on it."""

    tp: int  # tensor-parallel size (inside a node)
    pp: int  # pipeline stages
    dp: int  # data-parallel replicas (ZeRO-1 over them)
    micro_batch: int  # sequences per micro-batch
    n_micro: int  # micro-batches per replica per step
    recompute: str  # "selective" or "full" activation recomputation
    memory_bytes: float  # per-GPU memory of the layout (mlcalc.memory.training_memory, via the engine)
    compute_s: float  # the step less bubble and exposed communication (kernels, recomputation included)
    bubble_s: float  # pipeline bubble of the schedule
    comm_s: float  # exposed communication: tensor + pipeline + data parallel not hidden
    step_s: float  # compute + bubble + exposed communication (mlcalc.steptime.predict_step)


INTERLEAVE = (1, 2, 4)  # virtual stages per GPU tried with the interleaved 1F1B schedule


def _interleave(pp: int, n_micro: int, n_layers: int) -> int:
    """Most virtual stages of INTERLEAVE the interleaved schedule allows (Narayanan et al. 2021: the
    micro-batches a multiple of the stages, at least v layers per stage); 1: plain 1F1B."""
    if pp == 1 or n_micro % pp:
        return 1
    return max(v for v in INTERLEAVE if n_layers // pp >= v)


def _engine_layout(tp: int, pp: int, dp: int, n_micro: int, rc: str, v: int) -> steptime.Layout:
    return steptime.Layout(tp=tp, pp=pp, dp=dp, zero=1 if dp > 1 else 0, sequence_parallel=tp > 1,
                           schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v, recompute=rc,
                           micro_batch=1, grad_accum=n_micro)


def best_layout(model: memory.ModelConfig, chip: str, n_gpus: int, seq_len: int, global_batch_tokens: float,
                flops_source: str = "achievable") -> Layout | None:
    """The fastest layout of ``n_gpus`` chips that fits memory (None if none fits).

    Tries tp in (1, 2, 4, 8) dividing the heads, pp over the divisors of the layer count and the
    powers of two up to :data:`MAX_PIPELINE` (uneven stages: the fullest one counts),
    micro-batch 1, ZeRO-1, sequence parallelism with tp, the interleaved schedule where it applies,
    selective recomputation and, if that does not fit, full recomputation. dp = n_gpus / (tp pp) must
    divide the global batch (in sequences). Each layout's step time and memory come from the one
    step-time engine, :func:`mlcalc.steptime.predict_step` (``engine="megatron"``, the chip's machine
    carried over from the book's measured H200, the node's links). ``flops_source`` is kept for
    callers; the engine uses the chip's published achievable matmul rate.
    """
    n = _check.positive_int("n_gpus", n_gpus)
    s = _check.positive_int("seq_len", seq_len)
    _check.choice("flops_source", flops_source, compute.flops_sources())
    system = network.system(chip_info(chip)["system"])
    gpn = system.gpus_per_node
    batch_seqs = max(1, int(round(_check.positive("global_batch_tokens", global_batch_tokens) / s)))
    best: Layout | None = None
    top = min(model.n_layers, MAX_PIPELINE)
    pps = sorted({p for p in range(1, top + 1) if model.n_layers % p == 0} | {2**k for k in range(8) if 2**k <= top})
    for tp in TENSOR_PARALLEL:
        if tp > gpn or model.n_heads % tp or n % tp:
            continue
        for pp in pps:
            if n % (tp * pp):
                continue
            dp = n // (tp * pp)
            if dp > batch_seqs:
                continue
            n_micro = max(1, round(batch_seqs / dp))  # the batch rounded to a whole number of micro-batches
            v = _interleave(pp, n_micro, model.n_layers)
            for rc in ("selective", "full"):
                pred = steptime.predict_step(model, _engine_layout(tp, pp, dp, n_micro, rc, v), seq_len=s,
                                             machine=chip, gpus_per_node=gpn, engine=ENGINE, system=system.key)
                if pred.fits:
                    break
            else:
                continue
            comm = pred.comm_exposed_s
            cand = Layout(tp, pp, dp, 1, n_micro, rc, pred.peak_bytes_per_gpu,
                          pred.step_s - pred.bubble_s - comm, pred.bubble_s, comm, pred.step_s)
            if best is None or cand.step_s < best.step_s:
                best = cand
    return best


def layout_as_run(model: memory.ModelConfig, chip: str, n_gpus: int, seq_len: int, global_batch_tokens: float,
                  layout: Mapping[str, Any]) -> Layout:
    """One given layout (a published run's: tp, pp, recompute and optionally micro_batch, zero, schedule,
    virtual_stages, sequence_parallel) timed by the engine as :func:`best_layout` times its candidates."""
    n = _check.positive_int("n_gpus", n_gpus)
    s = _check.positive_int("seq_len", seq_len)
    tp, pp = int(layout.get("tp", 1)), int(layout.get("pp", 1))
    if n % (tp * pp):
        raise ValueError(f"layout={dict(layout)!r} is not allowed: tp x pp must divide n_gpus={n}")
    dp = n // (tp * pp)
    mb = int(layout.get("micro_batch", 1))
    batch_seqs = max(1, int(round(_check.positive("global_batch_tokens", global_batch_tokens) / s)))
    n_micro = max(1, round(batch_seqs / (dp * mb)))
    system = network.system(chip_info(chip)["system"])
    lay = steptime.Layout(tp=tp, pp=pp, dp=dp, zero=int(layout.get("zero", 1 if dp > 1 else 0)),
                          sequence_parallel=bool(layout.get("sequence_parallel", False)),
                          schedule=str(layout.get("schedule", "1f1b")), virtual_stages=int(layout.get("virtual_stages", 1)),
                          recompute=str(layout.get("recompute", "selective")), micro_batch=mb, grad_accum=n_micro)
    pred = steptime.predict_step(model, lay, seq_len=s, machine=chip, gpus_per_node=system.gpus_per_node,
                                 engine=ENGINE, system=system.key)
    comm = pred.comm_exposed_s
    return Layout(tp, pp, dp, mb, n_micro, lay.recompute, pred.peak_bytes_per_gpu, pred.step_s - pred.bubble_s - comm,
                  pred.bubble_s, comm, pred.step_s)


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


def needs(model: memory.ModelConfig, n_gpus: int, gpus_per_node: int, tokens_per_s: float, n_tokens: float,
          filesystem_write_bytes_per_s: float, node_storage_bytes_per_s: float, restart_s: float) -> Needs:
    """Network, storage and failure figures of a run of ``n_gpus`` at ``tokens_per_s``."""
    n = _check.positive_int("n_gpus", n_gpus)
    nodes = max(1, math.ceil(n / gpus_per_node))
    if n > gpus_per_node:
        counts = network.fat_tree_counts(n, SWITCH_RADIX)
        tiers, switches, cables = counts.tiers, counts.switches, counts.transceivers // 2
    else:  # one node: NVLink only, no switch
        tiers = switches = cables = 0
    per_token = _bytes_per_token_on_disk(model.vocab)
    read = tokens_per_s * per_token
    dataset = n_tokens * per_token
    ckpt = storage.checkpoint_size(float(model.n_params())).total_bytes
    write = storage.checkpoint_write_time(ckpt, filesystem_write_bytes_per_s, nodes, node_storage_bytes_per_s)
    mtbf = storage.system_mtbf_s(device_mtbf_s(), n)
    interval = storage.daly_interval_s(write.seconds, mtbf)
    gp = storage.goodput(interval, write.seconds, mtbf, restart_s)
    cap = storage.storage_capacity(dataset, ckpt, CHECKPOINTS_KEPT)
    return Needs(nodes, tiers, switches, cables, read, dataset, ckpt, write.seconds,
                 write.effective_bytes_per_s, cap.to_buy_bytes, mtbf, interval, gp.fraction)


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
    p = _check.non_negative("purchase_per_gpu", purchase_per_gpu)
    _check.positive("board_power_w", board_power_w)
    node_kw = _check.positive("node_power_kw", node_power_kw)
    g = _check.positive_int("gpus_per_node", gpus_per_node)
    life = _check.positive("life_years", default("life_years") if life_years is None else life_years)
    u = _check.fraction("utilization", utilization)
    gp = _check.fraction("goodput", goodput)
    pue = _check.at_least("pue", default("pue") if pue is None else pue, 1.0)
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
    hours_per_year = 8766.0
    kw_per_gpu = node_kw / g
    parts = {
        "hardware (depreciation)": p * (1.0 + net) / (life * hours_per_year),
        "power (x PUE)": kw_per_gpu * pue * kwh,
        "hosting": kw_per_gpu * host * 12.0 / hours_per_year,
        "staff": staff / (per_admin * hours_per_year),
    }
    total = sum(parts.values())
    share = u * gp
    return Tco(total / share, MappingProxyType(parts), total, share)


def break_even_utilization(purchase_per_gpu: float, rent_per_gpu_hour: float, board_power_w: float,
                           node_power_kw: float, **kwargs: Any) -> float:
    """Utilization above which owning costs less per useful GPU-hour than renting (may exceed 1: never).

    Renting charges only the hours you use, so its cost per useful hour is ``rent / goodput``;
    owning is ``per_gpu_hour / (utilization x goodput)``: they are equal at ``per_gpu_hour / rent``.
    """
    rent = _check.positive("rent_per_gpu_hour", rent_per_gpu_hour)
    own = tco(purchase_per_gpu, board_power_w, node_power_kw, utilization=1.0, goodput=1.0, **kwargs)
    return own.per_gpu_hour / rent


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """One way to train the model, with every number and the chapter that computes it."""

    offer: Offer  # the chip and how it is paid for
    n_gpus: int  # accelerators
    layout: Layout  # tp x pp x dp and the step time
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


def _dollars(offer: Offer, gpu_hours: float, tco_kwargs: Mapping[str, Any]) -> float:
    if offer.way == "buy":
        c = chip_info(offer.chip)
        own = tco(offer.purchase_per_gpu, c["board_power_w"], c["node_power_kw"], goodput=1.0, **tco_kwargs)
        # GPU-hours held already include the failures' losses: price each at the owned rate over utilization.
        return gpu_hours * own.per_useful_gpu_hour
    return gpu_hours * offer.price_per_gpu_hour


def evaluate(model: memory.ModelConfig, offer: Offer, n_gpus: int, n_tokens: float, seq_len: int = 4096,
             global_batch_tokens: float = 4 * 2**20, deadline_days: float = math.inf,
             budget_dollars: float = math.inf, hpc_availability: float | None = None,
             filesystem_write_bytes_per_s: float | None = None, node_storage_bytes_per_s: float | None = None,
             restart_s: float | None = None, tco_kwargs: Mapping[str, Any] | None = None,
             layout: Layout | None = None) -> Plan | None:
    """The plan for ``n_gpus`` of an offer (None if the model fits no layout of that many); ``layout``:
    use this one (e.g. :func:`layout_as_run`) instead of the fastest that fits."""
    n_tokens = _check.positive("tokens", n_tokens)
    lay = layout if layout is not None else best_layout(model, offer.chip, n_gpus, seq_len, global_batch_tokens)
    if lay is None:
        return None
    batch_tokens = lay.dp * lay.n_micro * lay.micro_batch * seq_len
    tps = batch_tokens / lay.step_s
    peak = spec(offer.chip).peak_flops("bf16")
    mfu = tps * flops_per_token(model, seq_len) / (n_gpus * peak)
    fs = (default("filesystem_write_gbps") * 1e9 if filesystem_write_bytes_per_s is None
          else filesystem_write_bytes_per_s)
    node = default("storage_gbps_per_node") * 1e9 if node_storage_bytes_per_s is None else node_storage_bytes_per_s
    restart = default("restart_s") if restart_s is None else restart_s
    gpn = network.system(chip_info(offer.chip)["system"]).gpus_per_node
    nd = needs(model, n_gpus, gpn, tps, n_tokens, fs, node, restart)
    held_s = n_tokens / tps / max(nd.goodput, 1e-9)  # GPUs held: training plus what failures cost
    run_s = held_s
    if offer.way == "hpc":  # charged for the hours the jobs run, but waiting in the queue between them
        avail = default("hpc_availability") if hpc_availability is None else hpc_availability
        run_s = held_s / _check.fraction("hpc availability", avail)
    gpu_hours = n_gpus * held_s / SECONDS_PER_HOUR
    dollars = _dollars(offer, gpu_hours, tco_kwargs or {})
    return Plan(offer, n_gpus, lay, tps, mfu, run_s / SECONDS_PER_DAY, gpu_hours, dollars, nd,
                deadline_days if math.isfinite(deadline_days) else None,
                budget_dollars if math.isfinite(budget_dollars) else None)


def leanest_memory_bytes(model: memory.ModelConfig, chip: str, n_gpus: int, seq_len: int) -> float:
    """Per-GPU memory of the leanest layout of ``n_gpus`` (full recomputation, ZeRO-1, micro-batch 1).

    Over the same bounded set of tp and pp as :func:`best_layout`; layouts whose tp x pp does not
    divide ``n_gpus`` are skipped. ``inf`` if none divides it.
    """
    n = _check.positive_int("n_gpus", n_gpus)
    acc = spec(chip)
    gpn = network.system(chip_info(chip)["system"]).gpus_per_node
    top = min(model.n_layers, MAX_PIPELINE)
    pps = sorted({p for p in range(1, top + 1) if model.n_layers % p == 0} | {2**k for k in range(8) if 2**k <= top})
    best = math.inf
    for tp in TENSOR_PARALLEL:
        if tp > gpn or model.n_heads % tp:
            continue
        for pp in pps:
            if n % (tp * pp):
                continue
            dp = n // (tp * pp)
            staged = model if model.n_layers % pp == 0 else replace(model, n_layers=math.ceil(model.n_layers / pp) * pp)
            mem = memory.training_memory(staged, acc.memory_bytes, 1, seq_len, dp, tp, pp, 1 if dp > 1 else 0,
                                         recompute="full")
            best = min(best, mem.total_bytes)
    return best


def _days_lower_bound(model: memory.ModelConfig, offer: Offer, n_gpus: int, n_tokens: float, seq_len: int,
                      hpc_availability: float | None) -> float:
    """Days the run takes at least: its model FLOPs at the chip's achievable matmul rate, nothing else."""
    rate = compute.achievable_flops(offer.chip, "bf16", "achievable")
    days = n_tokens * flops_per_token(model, seq_len) / (n_gpus * rate) / SECONDS_PER_DAY
    if offer.way == "hpc":
        days /= default("hpc_availability") if hpc_availability is None else hpc_availability
    return days


class Search(NamedTuple):
    """The planner's answer: feasible plans ranked, or why there is none."""

    plans: tuple[Plan, ...]  # feasible plans, cheapest first (ties: fastest)
    closest: tuple[Plan, ...]  # one per offer when none is feasible: its fastest count
    problems: tuple[str, ...]  # which constraint breaks and by how much (empty when plans exist)
    counts_tried: int  # GPU counts evaluated in all (bounded by len(GPU_COUNTS) x offers)


def search(model: memory.ModelConfig, offer_names: Iterable[str], n_tokens: float, deadline_days: float,
           budget_dollars: float, seq_len: int = 4096, global_batch_tokens: float = 4 * 2**20,
           max_gpus: int = 16384, **kwargs: Any) -> Search:
    """For each offer, the fewest GPUs (8 x 2^k, at most ``max_gpus``) that meet the deadline.

    Feasible plans are ranked by dollars, then days. When none is feasible, ``problems`` names
    the constraint that breaks (memory, deadline, budget) and by how much.
    """
    deadline = _check.positive("deadline (days)", deadline_days)
    budget = _check.positive("budget (dollars)", budget_dollars)
    cap = _check.positive_int("max GPUs", max_gpus)
    if cap > MAX_GPUS:
        raise ValueError(f"max GPUs={max_gpus!r} is not allowed: the planner searches at most {MAX_GPUS:,}")
    names = list(offer_names)
    if not names:
        raise ValueError("offers=[] is not allowed: choose at least one offer")
    for name in names:
        _check.choice("offer", name, offers())
    plans, closest, problems = [], [], []
    tried = 0
    seconds_floor = None
    fastest: Plan | None = None

    def consider(offer: Offer, n: int) -> Plan | None:
        """Evaluate one count; keep the fastest plan of the offer and the shortest step seen."""
        nonlocal tried, seconds_floor, fastest
        tried += 1
        p = evaluate(model, offer, n, n_tokens, seq_len, global_batch_tokens, deadline, budget, **kwargs)
        if p is not None:
            if seconds_floor is None or p.layout.step_s < seconds_floor:
                seconds_floor = p.layout.step_s
            if fastest is None or p.days < fastest.days:
                fastest = p
        return p

    for name in names:
        offer = offers()[name]
        fastest = None
        chosen: Plan | None = None
        counts = [n for n in GPU_COUNTS if n <= cap]
        skipped = []
        # First pass: skip the counts that cannot meet the deadline even at the compute-only lower bound
        # (every token's FLOPs at the achievable rate, no bubble, communication or failures).
        for n in counts:
            if _days_lower_bound(model, offer, n, n_tokens, seq_len, kwargs.get("hpc_availability")) > deadline:
                skipped.append(n)
                continue
            p = consider(offer, n)
            if p is not None and p.meets_deadline:
                chosen = p
                break
        if chosen is None:  # nothing meets the deadline: look at every count for the fastest plan
            for n in skipped:
                consider(offer, n)
        if fastest is None:
            need = leanest_memory_bytes(model, offer.chip, counts[-1] if counts else 8, seq_len)
            have = spec(offer.chip).memory_bytes
            problems.append(f"memory: {model.name} fits no layout of up to {cap:,} x {offer.chip}: the leanest "
                            f"(tp <= 8, ZeRO-1, full recomputation) needs {need / 1e9:,.0f} GB per GPU, "
                            f"{(need - have) / 1e9:,.0f} GB ({(need - have) / have:.0%}) over its "
                            f"{have / 1e9:,.0f} GB")
            continue
        if chosen is not None and chosen.meets_budget:
            plans.append(chosen)
        else:
            closest.append(chosen or fastest)
    if not plans and closest:
        fast = min(closest, key=lambda p: p.days)
        if not fast.meets_deadline:
            over = fast.days - fast.deadline_days
            problems.append(f"deadline: the fastest plan, {fast.n_gpus:,} x {fast.offer.name} (the most GPUs that "
                            f"still speed it up, up to {cap:,}), takes {fast.days:,.1f} days: {over:,.1f} days "
                            f"({over / fast.deadline_days:.0%}) over the {fast.deadline_days:,.1f}-day deadline")
        on_time = [p for p in closest if p.meets_deadline] or closest
        cheap = min(on_time, key=lambda p: p.dollars)
        if not cheap.meets_budget:
            over = cheap.dollars - cheap.budget_dollars
            which = "that meets the deadline" if cheap.meets_deadline else "of those that miss the deadline"
            problems.append(f"budget: the cheapest plan {which}, {cheap.n_gpus:,} x {cheap.offer.name}, costs "
                            f"${cheap.dollars:,.0f}: ${over:,.0f} ({over / cheap.budget_dollars:.0%}) over the "
                            f"${cheap.budget_dollars:,.0f} budget")
    if not plans and seconds_floor is not None and deadline * SECONDS_PER_DAY < seconds_floor:
        problems.insert(0, f"deadline: {deadline_days:g} days is shorter than one training step "
                           f"({seconds_floor:,.1f} s)")
    plans.sort(key=lambda p: (p.dollars, p.days))
    closest.sort(key=lambda p: (p.days, p.dollars))
    return Search(tuple(plans), tuple(closest), tuple(problems), tried)


# --------------------------------------------------------------------------- published runs


class RunCheck(NamedTuple):
    """The planner against one published training run."""

    name: str  # run name
    gpus: int  # GPUs the run used
    chip: str  # catalogue key
    predicted_gpu_hours: float  # the planner's GPU-hours
    published_gpu_hours: float | None  # as published (None if not)
    predicted_days: float  # the planner's wall-clock days
    published_days: float | None  # as published (None if not)
    error: float  # predicted / published - 1 on GPU-hours (on days if no GPU-hours are published)
    layout: Layout  # the layout the planner picked
    mfu: float  # the planner's MFU
    goodput: float  # the planner's goodput after failures
    what: str  # what the published figure counts
    source: str  # where it is published


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
        pub_h = 6.0 * float(e["n_params"]) * float(e["n_tokens"]) / (float(e["published_tflops_per_gpu"]) * 1e12) \
            / SECONDS_PER_HOUR
    pub_d = e.get("days")
    if pub_h is not None:
        err = p.gpu_hours / float(pub_h) - 1.0
    else:
        err = p.days / float(pub_d) - 1.0
    return RunCheck(name, int(e["gpus"]), e["chip"], p.gpu_hours, None if pub_h is None else float(pub_h), p.days,
                    None if pub_d is None else float(pub_d), err, p.layout, p.mfu, p.needs.goodput, e["what"],
                    e["source"])


# --------------------------------------------------------------------------- keeping a plan


def _item(value: float, unit: str, chapter: str, how: str) -> dict[str, Any]:
    return {"value": float(f"{value:.6g}"), "unit": unit, "chapter": CHAPTERS[chapter], "how": how}


def plan_numbers(p: Plan) -> dict[str, dict[str, Any]]:
    """Every number of a plan: value, unit, how it is computed and the chapter that computes it."""
    lay, nd = p.layout, p.needs
    return {
        "gpus": _item(p.n_gpus, "GPUs", "layout", "fewest 8 x 2^k that meets the deadline"),
        "memory per GPU": _item(lay.memory_bytes / 1e9, "GB", "memory", "mlcalc.memory.training_memory"),
        "step time": _item(lay.step_s, "s", "step", "compute + pipeline bubble + exposed communication"),
        "exposed communication": _item(lay.comm_s, "s", "layout", "mlcalc.steptime.predict_step"),
        "pipeline bubble": _item(lay.bubble_s, "s", "layout", "mlcalc.steptime.predict_step"),
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
        "job MTBF": _item(nd.mtbf_s / SECONDS_PER_HOUR, "h", "checkpoint", "device MTBF (Llama 3) / GPUs"),
        "checkpoint interval": _item(nd.interval_s / 60.0, "min", "checkpoint", "Daly 2006"),
        "goodput": _item(nd.goodput, "fraction", "checkpoint", "mlcalc.storage.goodput"),
        "storage to buy": _item(nd.capacity_bytes / 1e12, "TB", "capacity",
                                f"dataset + {CHECKPOINTS_KEPT} checkpoints / 0.8"),
    }


def plan_record(p: Plan, model: memory.ModelConfig, n_tokens: float) -> dict[str, Any]:
    """A plan as plain data: the inputs, the layout and every number with its unit and chapter."""
    lay = p.layout
    return {
        "model": model.name, "parameters": model.n_params(), "tokens": n_tokens,
        "offer": p.offer.name, "chip": p.offer.chip, "way": p.offer.way, "price_source": p.offer.source,
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


def plan_markdown(p: Plan, model: memory.ModelConfig, n_tokens: float, query: str = "") -> str:
    """The plan as a Markdown table: number, unit, how, chapter; ``query`` as in :func:`plan_json`."""
    rec = plan_record(p, model, n_tokens)
    lay = rec["layout"]
    reopen = [f"Reopen it on the book's site: {PLAN_PAGE}.html followed by `{query}`.", ""] if query else []
    lines = [f"# Plan: {rec['model']} on {rec['offer']}", "",
             f"{rec['tokens']:.4g} tokens; layout tp={lay['tp']} x pp={lay['pp']} x dp={lay['dp']}, ZeRO-1, "
             f"{lay['recompute']} recomputation. Price: {rec['price_source']}.", "", *reopen,
             "| number | value | unit | how | chapter |", "| --- | --- | --- | --- | --- |"]
    for k, v in rec["numbers"].items():
        lines.append(f"| {k} | {v['value']:,.4g} | {v['unit']} | {v['how']} | {v['chapter']} |")
    return "\n".join(lines) + "\n"


def compare(a: Plan, b: Plan) -> list[tuple[str, float, float, str]]:
    """Two plans side by side: (number, plan a, plan b, unit) for every number of a plan."""
    ra, rb = plan_numbers(a), plan_numbers(b)
    return [(k, ra[k]["value"], rb[k]["value"], ra[k]["unit"]) for k in ra]


__all__ = [
    "CHAPTERS", "CHINCHILLA_TOKENS_PER_PARAM", "GPU_COUNTS", "Layout", "MAX_GPUS", "Needs", "Offer", "PLAN_PAGE", "Plan",
    "RunCheck", "ENGINE", "Search", "Tco", "WAYS", "best_layout", "break_even_utilization",
    "check_run", "chinchilla_tokens", "chip_info", "compare", "data", "default", "device_mtbf_s", "evaluate",
    "flops_per_token", "layout_as_run", "leanest_memory_bytes", "needs", "offers", "plan_json", "plan_markdown", "plan_numbers",
    "plan_record",
    "published_runs",
    "run_model", "search", "tco",
]
