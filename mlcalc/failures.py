"""Failures at scale: published failure taxonomies, interruption rates scaled by GPU count, the parts of a
restart, hot spares, stragglers, silent data corruption, and the goodput that results.

The rates come from a published record (Llama 3 405B's 419 unexpected interruptions in 54 days on 16,384
H100s, by root cause), each cause scaled by the unit it lives in: a GPU cause by the GPU count, a host cause
by the node count. The checkpoint interval and the first-order goodput are the storage part's
(:func:`mlcalc.storage.daly_interval_s`, :func:`mlcalc.storage.goodput`); this module adds what a large job
loses besides: planned restarts, rollbacks after silent data corruption, and stragglers.

Units: seconds and hours as named; rates per hour; bytes and bytes/s.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, storage
from mlcalc.units import SECONDS_PER_HOUR as HOUR

UNITS = ("gpu", "node")
#: Most expected failures :func:`spares_needed` sums a Poisson tail over (a stated bound on its loop).
MAX_SPARE_MEAN = 100_000.0
#: Most GPUs the functions accept (ten million: far above any job run).
MAX_GPUS = 10_000_000


# --------------------------------------------------------------------------- data


@lru_cache(maxsize=None)
def data() -> Mapping[str, Any]:
    """The published failure records of ``data/failures.json`` (read-only view of the parsed file)."""
    return MappingProxyType(json.loads(resources.files("mlcalc.data").joinpath("failures.json").read_text()))


def record(key: str = "Llama 3 405B") -> Mapping[str, Any]:
    """One published failure record by name (ValueError listing the known ones otherwise)."""
    runs = {k: v for k, v in data()["runs"].items() if k != "fields"}
    _check.choice("record", key, runs)
    return MappingProxyType(runs[key])


def checks() -> Mapping[str, Mapping[str, Any]]:
    """Other published failure counts, to test a rate from one fleet on another."""
    return MappingProxyType({k: v for k, v in data()["checks"].items() if k != "fields"})


def restart_defaults() -> Mapping[str, float]:
    """Default parts of a restart (seconds) and the checkpoint read bandwidth (bytes/s), with sources in the data."""
    return MappingProxyType({k: float(v["value"]) for k, v in data()["restart"].items() if k != "fields"})


# --------------------------------------------------------------------------- rates


class CauseRate(NamedTuple):
    """One root cause's interruption rate, per unit it lives in."""

    cause: str  # e.g. "Faulty GPU"
    category: str  # the source's category ("GPU", "Host", "Network", ...)
    unit: str  # "gpu" or "node": what its rate scales with
    per_unit_hour: float  # interruptions per unit per hour
    # A field named count hides the method tuple.count (NamedTuple allows it; typeshed types the method on tuple, so
    # mypy calls it an incompatible override): readers and the notebooks write c.count, so the name stays.
    count: int  # type: ignore[assignment]  # interruptions the source saw


def cause_rates(key: str = "Llama 3 405B") -> tuple[CauseRate, ...]:
    """Each cause's rate per GPU-hour or node-hour: ``count / (units x hours)`` of the record."""
    try:
        return _cause_rates_of(key)
    except TypeError:  # a key that cannot be one (refused by record)
        return _cause_rates_of.__wrapped__(key)


@lru_cache(maxsize=64)  # pure (the data does not change), immutable: remembered per record (a planner asks per count)
def _cause_rates_of(key: str) -> tuple[CauseRate, ...]:
    r = record(key)
    hours = float(r["days"]) * 24.0
    units = {"gpu": float(r["gpus"]), "node": float(r["gpus"]) / float(r["gpus_per_node"])}
    return tuple(CauseRate(c["cause"], c["category"], c["unit"], c["count"] / (units[c["unit"]] * hours), c["count"])
                 for c in r["causes"])


class Interruptions(NamedTuple):
    """Interruptions a job should expect, by cause, from a published record's rates."""

    by_cause: Mapping[str, float]  # expected unexpected interruptions per cause
    by_category: Mapping[str, float]  # the same summed by the source's category
    unexpected: float  # all unexpected interruptions
    planned: float  # planned interruptions (maintenance), scaled by nodes
    sdc: float  # of the unexpected, silent data corruptions (detected)
    mtbf_s: float  # mean time between unexpected interruptions of the job, seconds
    per_day: float  # unexpected interruptions per day


def interruptions(n_gpus: int, hours: float, gpus_per_node: int = 8, key: str = "Llama 3 405B") -> Interruptions:
    """Expected interruptions of a job of ``n_gpus`` running ``hours``, by cause.

    ``N_cause = rate_cause * units * hours``, with units = GPUs or nodes (``ceil(n_gpus / gpus_per_node)``)
    as the cause lives in; failures are taken as independent at constant rates, so they add up over units
    and time.

    Dubey et al. 2024, "The Llama 3 Herd of Models", Table 5: 419 unexpected interruptions in 54 days on
    16,384 H100s (the rates are that record's, so its own job gets its count back):

    >>> interruptions(16384, 54 * 24).unexpected
    419.0
    """
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    h = _check.positive("hours", hours)
    g = _check.positive_int("gpus_per_node", gpus_per_node, 1024)
    units = {"gpu": float(n), "node": float(math.ceil(n / g))}
    by_cause = {c.cause: c.per_unit_hour * units[c.unit] * h for c in cause_rates(key)}
    by_cat: dict[str, float] = {}
    for c in cause_rates(key):
        by_cat[c.category] = by_cat.get(c.category, 0.0) + by_cause[c.cause]
    r = record(key)
    planned_rate = r["planned"] / (float(r["gpus"]) / r["gpus_per_node"] * r["days"] * 24.0)
    total = _check.result("unexpected interruptions", sum(by_cause.values()))
    mtbf = _check.positive_result("mtbf_s", h * HOUR / total)
    return _check.fields("interruptions", Interruptions(
        MappingProxyType(by_cause), MappingProxyType(by_cat), total, planned_rate * units["node"] * h,
        by_cause.get("Silent data corruption", 0.0), mtbf, total / h * 24.0))


# --------------------------------------------------------------------------- restart


class Restart(NamedTuple):
    """The parts of one restart after an unexpected interruption, seconds."""

    detect_s: float  # failure -> job stopped (a crash at once, a hang at the collective timeout)
    replace_s: float  # the failed node out, a spare in
    reschedule_s: float  # the job scheduled and every rank started
    load_s: float  # the checkpoint read back: bytes / read bandwidth
    warmup_s: float  # first steps after the start: compilation, dataloader, allocator
    total_s: float  # their sum


def restart_time(checkpoint_bytes: float, read_bytes_per_s: float | None = None, detect_s: float | None = None,
                 replace_s: float | None = None, reschedule_s: float | None = None,
                 warmup_s: float | None = None) -> Restart:
    """Time from an unexpected interruption to training again, part by part (defaults: ``restart_defaults``).

    ``R = detect + replace + reschedule + checkpoint_bytes / read_bytes_per_s + warmup``
    """
    d = restart_defaults()

    def pick(name: str, value: float | None) -> float:
        return _check.non_negative(name, d[name] if value is None else value)

    size = _check.non_negative("checkpoint_bytes", checkpoint_bytes)
    bw = _check.positive("read_bytes_per_s", d["read_bytes_per_s"] if read_bytes_per_s is None else read_bytes_per_s)
    parts = (pick("detect_s", detect_s), pick("replace_s", replace_s), pick("reschedule_s", reschedule_s),
             _check.result("load_s", size / bw), pick("warmup_s", warmup_s))
    return _check.fields("restart_time", Restart(*parts, _check.result("restart total_s", sum(parts))))


# --------------------------------------------------------------------------- stragglers and spares


def straggler_loss(n_gpus: int, p_slow: float, slowdown: float) -> float:
    """Share of time lost to stragglers in a synchronous job: each step waits for the slowest rank.

    If each GPU is, independently, slow by a fraction ``slowdown`` of its speed (its step takes
    ``1 / (1 - slowdown)`` as long) for a share ``p_slow`` of the time, some GPU of ``n`` is slow for a
    share ``1 - (1 - p_slow)^n`` of the time, and the job loses ``slowdown`` of its throughput then:

    ``loss = (1 - (1 - p_slow)^n) * slowdown``
    """
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    p = _check.in_range("p_slow", p_slow, 0.0, 1.0)
    s = _check.in_range("slowdown", slowdown, 0.0, 0.99)
    any_slow = -math.expm1(n * math.log1p(-p)) if p < 1 else 1.0
    return _check.result("straggler_loss", any_slow * s)


def spares_needed(failures_per_hour: float, repair_hours: float, confidence: float = 0.99) -> int:
    """Hot spare nodes that keep a job at full size with probability ``confidence``.

    Nodes fail at ``failures_per_hour`` and each is away ``repair_hours`` (Little's law: on average
    ``mu = rate x repair`` are away at once); the number away is Poisson(``mu``), and the spares needed is its
    ``confidence`` quantile: the least ``k`` with ``P(X <= k) >= confidence``.
    """
    rate = _check.non_negative("failures_per_hour", failures_per_hour)
    rep = _check.non_negative("repair_hours", repair_hours)
    conf = _check.in_range("confidence", confidence, 0.5, 0.999999)
    mu = _check.result("nodes away on average", rate * rep)
    if mu > MAX_SPARE_MEAN:
        raise ValueError(f"failures_per_hour x repair_hours={mu:g} is not allowed: at most {MAX_SPARE_MEAN:g} "
                         "nodes away on average")
    if mu == 0:
        return 0
    log_p = -mu  # log P(X = 0)
    cdf, k = math.exp(log_p), 0
    for k in range(1, int(mu + 40 * math.sqrt(mu) + 100)):  # stated bound: far past any quantile below 1 - 1e-6
        if cdf >= conf:
            return k - 1
        log_p += math.log(mu) - math.log(k)
        cdf += math.exp(log_p)
    return k


# --------------------------------------------------------------------------- goodput


class ScaleGoodput(NamedTuple):
    """Share of wall-clock time that advances training at scale, and where the rest goes."""

    fraction: float  # useful share: 1 - the losses below (floored at 0)
    checkpoint_fraction: float  # blocked in checkpoints: delta / (tau + delta)
    lost_work_fraction: float  # work redone after unexpected interruptions: half a period each
    restart_fraction: float  # restarts after unexpected interruptions: R / M
    planned_fraction: float  # restarts for planned maintenance (no work lost: a checkpoint is taken first)
    sdc_fraction: float  # extra work redone after silent data corruption (rolled back further)
    straggler_fraction: float  # throughput lost waiting for slow ranks
    interval_s: float  # compute time between checkpoints used (Daly's optimum unless given)
    mtbf_s: float  # mean time between unexpected interruptions of the job
    restart_s: float  # one restart


def scale_goodput(n_gpus: int, checkpoint_s: float, restart: Restart, gpus_per_node: int = 8,
                  interval_s: float | None = None, key: str = "Llama 3 405B", sdc_rollback_periods: float = 1.0,
                  p_slow: float = 0.0, slowdown: float = 0.0) -> ScaleGoodput:
    """Goodput of a job of ``n_gpus`` from a published record's failure rates.

    ``waste = delta/(tau+delta) + ((tau+delta)/2 + R)/M + R_planned/M_planned + k (tau+delta) N_sdc/T + stragglers``

    - unexpected interruptions at the record's rates, scaled by GPUs and nodes (:func:`interruptions`): the
      first-order model of :func:`mlcalc.storage.goodput` (checkpoints, half a period lost, a restart each);
    - planned interruptions (maintenance) cost a restart but lose no work;
    - a silent data corruption, found late, rolls back ``sdc_rollback_periods`` more checkpoint periods;
    - stragglers: :func:`straggler_loss`.

    ``interval_s`` defaults to Daly's optimum for ``checkpoint_s`` and the job's MTBF.
    """
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    delta = _check.non_negative("checkpoint_s", checkpoint_s)
    k = _check.non_negative("sdc_rollback_periods", sdc_rollback_periods, 1000.0)
    per_hour = interruptions(n, 1.0, gpus_per_node, key)
    mtbf = per_hour.mtbf_s
    tau = storage.daly_interval_s(max(delta, 1e-9), mtbf) if interval_s is None else _check.positive("interval_s",
                                                                                                     interval_s)
    base = storage.goodput(tau, delta, mtbf, restart.total_s)
    losses = [base.checkpoint_fraction, base.lost_work_fraction, base.restart_fraction]
    # each further loss takes its share of what is left, so the shares never pass 100% in all
    for extra in (per_hour.planned / HOUR * restart.total_s, per_hour.sdc / HOUR * k * (tau + delta),
                  straggler_loss(n, p_slow, slowdown)):
        losses.append(min(_check.result("loss share", extra), max(0.0, 1.0 - sum(losses))))
    checkpoint, lost_work, restarts, planned, sdc, stragglers = losses
    return _check.fields("scale_goodput", ScaleGoodput(max(0.0, 1.0 - sum(losses)), checkpoint, lost_work, restarts,
                                                       planned, sdc, stragglers, tau, mtbf, restart.total_s))


__all__ = ["CauseRate", "Interruptions", "Restart", "ScaleGoodput", "UNITS", "cause_rates", "checks", "data",
           "interruptions", "record", "restart_defaults", "restart_time", "scale_goodput", "spares_needed",
           "straggler_loss"]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
