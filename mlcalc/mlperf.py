"""MLPerf Inference's LLM results (MLCommons, datacenter, closed division) next to the in-flight serving model.

MLPerf Inference runs a fixed model on a fixed dataset under LoadGen, MLCommons' load generator. In the Offline
scenario every sample is sent at once and the score is the throughput (output tokens per second of the whole
system); in the Server scenario requests arrive as a Poisson process and the score is the highest rate whose 99th
percentiles of time to first token (TTFT) and time per output token (TPOT) stay within the benchmark's limits
(MLCommons, "MLPerf Inference Rules", the datacenter table: Llama 2 70B and Mixtral 8x7B 2,000 ms / 200 ms);
Interactive is the Server scenario under tighter limits (Llama 2 70B: 450 ms / 40 ms). The
closed division fixes the model and the accuracy target; the submitter picks the engine, the parallel layout and
the precision, and says which in its configuration files.

Each result (mlcalc/data/mlperf_inference.json) is predicted with :func:`mlcalc.servemeasured.inflight`, the model
the TensorRT-LLM v0.17 and v1.0 in-flight rows are checked with: one replica of ``tp`` GPUs at the submission's
KV fraction, batch and token caps, times the replicas in the system. Offline is that replica at full load. Server
and Interactive are the same replica at the largest batch whose iteration (every running request's next token: the
TPOT) stays within the scenario's TPOT limit; no queue is modelled, so the TTFT limit is not checked (the logs show
the 99th percentile inside it). For those rows the mean TPOT is a second case: the iteration at the number of
requests the run kept in flight (Little's law: completed samples per second x mean latency, both in the log).

What no source gives: the datasets' mean input length (see the data file's ``input_note``). Every case assumes the
mean input equals the published mean output (:func:`assumed_input`) and says at which mean input the model would
give the published figure (:func:`implied_input`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, memory
from mlcalc import servemeasured as sm

SCENARIOS = ("Offline", "Server", "Interactive")
#: What a case checks: the system's output tokens per second, or (Server, Interactive) the mean time per output token.
QUANTITIES = ("throughput", "tpot")


@lru_cache(maxsize=None)
def data() -> Mapping[str, Any]:
    """The MLPerf results checked here, with the rules and dataset facts they are read with."""
    return MappingProxyType(json.loads(resources.files("mlcalc.data").joinpath("mlperf_inference.json").read_text()))


def results() -> tuple[Mapping[str, Any], ...]:
    """Every result row, in the data file's order."""
    return tuple(data()["results"])


def assumed_input(benchmark: str) -> int:
    """The mean input length a case assumes for ``benchmark``: its published mean output (the closed division's
    tokens-per-sample reference), rounded. A placeholder, stated as one: MLCommons publishes no mean input.

    >>> assumed_input("llama2-70b"), assumed_input("mixtral-8x7b")
    (294, 145)
    """
    ds = data()["datasets"]
    _check.choice("benchmark", benchmark, tuple(ds))
    return round(float(ds[benchmark]["output_tokens_per_sample"]))


def output_tokens(row: Mapping[str, Any]) -> int:
    """A result's mean output per sample: its tokens per second over its samples per second (both in its log)."""
    return max(1, round(float(row["tokens_per_s"]) / float(row["samples_per_s"])))


def replicas(row: Mapping[str, Any]) -> int:
    """Engine replicas in the system: GPUs over the tensor-parallel size."""
    gpus, tp = int(row["gpus"]), int(row["tp"])
    if gpus % tp:
        raise ValueError(f"tp={tp!r} is not allowed for {gpus} GPUs: replicas of {tp} GPUs must fill the system")
    return gpus // tp


def _caps(row: Mapping[str, Any], batch: int | None = None) -> tuple[int, int]:
    max_tokens = row.get("max_tokens") or sm.TRTLLM_MAX_TOKENS  # not stated: trtllm-bench's own ceiling
    return (int(batch if batch is not None else row["max_batch"]), int(max_tokens))


def _replica(row: Mapping[str, Any], prompt: int, output: int, batch: int | None = None) -> sm.Inflight:
    ds = data()["datasets"][row["benchmark"]]
    return sm.inflight(memory.model_preset(ds["model"]), row["chip"], int(row["tp"]), prompt, output,
                       row["precision"], float(row["kv_fraction"]), caps=_caps(row, batch))


def tpot_limit_s(row: Mapping[str, Any]) -> float:
    """The TPOT limit of a Server or Interactive run (the rules' datacenter table), seconds."""
    limits = data()["limits"][row["benchmark"]]
    _check.choice("scenario", row["scenario"], tuple(limits))
    return float(limits[row["scenario"]]["tpot_ms"]) / 1e3


def replica_at_load(row: Mapping[str, Any], prompt: int | None = None) -> sm.Inflight:
    """One replica as the scenario loads it. Offline: full load (the KV room's requests within the submission's
    caps). Server, Interactive: the largest batch whose iteration is within the TPOT limit (full load when it
    already is)."""
    p = assumed_input(row["benchmark"]) if prompt is None else _check.positive_int("prompt", prompt)
    o = output_tokens(row)
    _check.choice("scenario", row["scenario"], SCENARIOS)
    full = _replica(row, p, o)
    if row["scenario"] == "Offline" or full.iteration_s <= tpot_limit_s(row):
        return full
    lo, hi = 1, full.batch  # the iteration grows with the batch: the largest batch within the limit
    if _replica(row, p, o, 1).iteration_s > tpot_limit_s(row):
        raise ValueError(f"prompt={p!r} is not allowed for {row['system']}: one request's iteration already exceeds "
                         f"the {tpot_limit_s(row) * 1e3:.0f} ms TPOT limit")
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _replica(row, p, o, mid).iteration_s <= tpot_limit_s(row):
            lo = mid
        else:
            hi = mid - 1
    return _replica(row, p, o, lo)


def predicted_tokens_per_s(row: Mapping[str, Any], prompt: int | None = None) -> float:
    """The system's output tokens per second: one replica at the scenario's load times the replicas."""
    return replica_at_load(row, prompt).tokens_per_s * replicas(row)


def in_flight(row: Mapping[str, Any]) -> int:
    """Requests one replica held on average in a Server or Interactive run (Little's law on its log: completed
    samples per second x mean latency, over the replicas)."""
    if row["scenario"] == "Offline":
        raise ValueError(f"scenario={row['scenario']!r} is not allowed: an Offline log's latencies are of one query "
                         "holding every sample, not of requests in flight")
    return max(1, round(float(row["samples_per_s"]) * float(row["latency_mean_ms"]) / 1e3 / replicas(row)))


def predicted_tpot_s(row: Mapping[str, Any], prompt: int | None = None) -> float:
    """A Server or Interactive run's mean time per output token: one replica's iteration at the requests it held (:func:`in_flight`),
    each iteration also carrying the prompts of the requests that replace those that finish."""
    p = assumed_input(row["benchmark"]) if prompt is None else _check.positive_int("prompt", prompt)
    return _replica(row, p, output_tokens(row), in_flight(row)).iteration_s


def _predict(row: Mapping[str, Any], quantity: str, prompt: int) -> float:
    return predicted_tokens_per_s(row, prompt) if quantity == "throughput" else predicted_tpot_s(row, prompt)


def _observed(row: Mapping[str, Any], quantity: str) -> float:
    return float(row["tokens_per_s"]) if quantity == "throughput" else float(row["tpot_mean_ms"]) / 1e3


def implied_input(row: Mapping[str, Any], quantity: str = "throughput") -> int | None:
    """The mean input length (whole tokens, 1 to the dataset's cap) at which the model gives the published figure,
    or None when none in that range does. Both quantities move one way with the input (more prompt tokens an
    iteration: fewer output tokens per second, a longer iteration), so bisection finds it."""
    _check.choice("quantity", quantity, QUANTITIES)
    cap = int(data()["datasets"][row["benchmark"]]["max_input_tokens"])
    obs = _observed(row, quantity)
    sign = 1.0 if quantity == "throughput" else -1.0  # throughput falls with the input, TPOT rises

    def above(p: int) -> bool:  # the model says more than was published (for TPOT: less)
        return sign * (_predict(row, quantity, p) - obs) > 0

    if not above(1) or above(cap):
        return None
    lo, hi = 1, cap
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if above(mid):
            lo = mid
        else:
            hi = mid
    return hi


class MlperfCheck(NamedTuple):
    """One MLPerf figure next to the model's."""

    where: str  # repository @ commit : path of the LoadGen summary
    round: str
    submitter: str
    system: str
    chip: str
    gpus: int
    tp: int
    model: str
    benchmark: str
    scenario: str
    quantity: str  # "throughput" (output tokens/s of the system) or "tpot" (mean time per output token, s)
    precision: str
    input: int  # the mean input assumed (assumed_input)
    output: int  # the row's mean output per sample
    batch: int  # requests a replica runs in the modelled iteration
    published: float
    predicted: float
    error: float  # predicted / published - 1
    implied_input: int | None  # the mean input at which the model gives the published figure
    cause: str
    note: str


#: The tolerance the cases are judged by (the serving families' published-result target).
TARGET = 0.25


def _check_row(row: Mapping[str, Any], quantity: str) -> MlperfCheck:
    ds = data()["datasets"][row["benchmark"]]
    p, o = assumed_input(row["benchmark"]), output_tokens(row)
    got = replica_at_load(row) if quantity == "throughput" else _replica(row, p, o, in_flight(row))
    pred = _predict(row, quantity, p)
    obs = _observed(row, quantity)
    err = pred / obs - 1.0
    implied = implied_input(row, quantity)
    half, double = _predict(row, quantity, max(1, p // 2)), _predict(row, quantity, min(int(ds["max_input_tokens"]),
                                                                                        2 * p))
    unit = (lambda x: f"{x:,.0f} tokens/s") if quantity == "throughput" else (lambda x: f"{x * 1e3:.0f} ms")
    load = (f"{replicas(row)} replica{'s' if replicas(row) > 1 else ''} of TP {row['tp']}, {got.batch:,} requests a "
            f"replica, iteration {got.iteration_s * 1e3:.0f} ms")
    if quantity == "tpot":
        held = in_flight(row)
        load += (f" (the {held:,} a replica held: Little's law on the log)" if held == got.batch else
                 f" (the run held {held:,} a replica by Little's law on the log; at the assumed lengths the KV room "
                 f"and the submission's caps hold {got.batch:,})")
    elif row["scenario"] != "Offline":
        full = _replica(row, p, o)
        load += (f" (full load meets the {tpot_limit_s(row) * 1e3:.0f} ms TPOT limit)" if full.batch == got.batch
                 else f" (full load's {full.iteration_s * 1e3:.0f} ms is over the {tpot_limit_s(row) * 1e3:.0f} ms "
                      "TPOT limit: batch cut to meet it)")
    note = (f"mean input {p} tokens assumed (MLCommons publishes none: the published mean output), mean output {o} "
            f"(the log's tokens over samples); {load}; with the mean input at {max(1, p // 2)} or "
            f"{min(int(ds['max_input_tokens']), 2 * p)} tokens the model gives {unit(half)} or {unit(double)}; "
            + (f"it gives the published {unit(obs)} at a mean input of {implied} tokens"
               if implied is not None else f"no mean input up to {ds['max_input_tokens']} tokens gives the published "
                                           f"{unit(obs)}"))
    if "tpot_mean_ms" in row and quantity == "throughput":
        note += (f"; the run's mean TPOT {float(row['tpot_mean_ms']):.0f} ms (99th percentile "
                 f"{float(row['tpot_p99_ms']):.0f}), TTFT {float(row['ttft_mean_ms']):.0f} ms "
                 f"({float(row['ttft_p99_ms']):.0f})")
    cause = _miss_cause(row, quantity, p, implied) if abs(err) > TARGET else ""
    return MlperfCheck(f"{row['repo']} @ {row['commit'][:7]}: {row['path']}", row["round"], row["submitter"],
                       row["system"], row["chip"], int(row["gpus"]), int(row["tp"]), ds["model"], row["benchmark"],
                       row["scenario"], quantity, row["precision"], p, o, got.batch, obs, pred, err, implied, cause,
                       note)


def _miss_cause(row: Mapping[str, Any], quantity: str, p: int, implied: int | None) -> str:
    ds = data()["datasets"][row["benchmark"]]
    where = (f"at a mean input of {implied} tokens" if implied is not None
             else f"at no mean input up to the dataset's {ds['max_input_tokens']}-token cap")
    text = (f"no cause stated by the source (the LoadGen log gives the figure, not its parts); ours: the dataset's mean "
            f"input length, which MLCommons does not publish: the case assumes {p} tokens (the published mean "
            f"output), and the model gives the published figure {where}")
    if row["benchmark"] == "mixtral-8x7b":
        text += ("; the reference's one printed sample (a GSM8K prompt) has 662 input tokens for 174 out, so this "
                 "set's prompts are likely several times the placeholder; the TensorRT-LLM v0.17 Mixtral rows, whose "
                 "lengths are stated, over-predict too (mlcalc.servemeasured.INFLIGHT_CAUSES['moe'])")
    return text


@lru_cache(maxsize=None)
def check() -> tuple[MlperfCheck, ...]:
    """Every result's throughput, and every Server and Interactive result's mean TPOT, against the model."""
    out = []
    for row in results():
        out.append(_check_row(row, "throughput"))
        if row["scenario"] != "Offline":
            out.append(_check_row(row, "tpot"))
    return tuple(out)


__all__ = ["MlperfCheck", "QUANTITIES", "SCENARIOS", "TARGET", "assumed_input", "check", "data", "implied_input",
           "in_flight", "output_tokens", "predicted_tokens_per_s", "predicted_tpot_s", "replica_at_load", "replicas",
           "results", "tpot_limit_s"]
